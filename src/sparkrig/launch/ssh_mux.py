"""One ssh connection per node for a command's many short steps (OpenSSH connection sharing).

`doctor`, `fabric discover` and `fabric apply` run tens of short commands on every node; each
new ssh connection pays a key exchange and authentication (about 0.3 s on the test twin, more
across a real LAN). The first command to a node starts a master connection (`ControlMaster=
auto`) in a folder private to this sparkrig process; later commands ride on it. When sparkrig
exits it closes every master it started (`ssh -O exit`), so nothing outlives the command; a
master left by a killed sparkrig ends by itself after `defaults.SSH_MUX_PERSIST_S` idle.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

from sparkrig import defaults

# a unix socket path holds 108 bytes; %C adds 40 hex digits and ssh a temporary suffix
_SOCKET_PATH_LIMIT = 100 - 40 - 20

_lock = threading.Lock()
_folder: Path | None = None
_masters: set[tuple[str | None, str]] = set()


def _private_folder() -> Path | None:
    """This process's folder for control sockets (0700), or None where no short path exists."""
    global _folder  # noqa: PLW0603 - one folder per process, removed at exit
    if _folder is not None:
        return _folder
    # mkdtemp makes a 0700 folder of a fresh name; /tmp is the short fallback for a long TMPDIR
    for base in (os.environ.get("XDG_RUNTIME_DIR"), tempfile.gettempdir(), "/tmp"):  # noqa: S108
        if not base or not os.path.isdir(base):
            continue
        try:
            made = Path(tempfile.mkdtemp(prefix="sparkrig-ssh-", dir=base))
        except OSError:
            continue
        if len(str(made)) <= _SOCKET_PATH_LIMIT:
            _folder = made
            atexit.register(close_masters)
            return _folder
        made.rmdir()
    return None


def mux_options(config_file: str | None, destination: str) -> list[str]:
    """`-o` options that share one connection to `destination`; none where sharing is off or
    no private folder could be made (every command then connects on its own, as before)."""
    if os.environ.get(defaults.SSH_MUX_OFF_ENV):
        return []
    with _lock:
        folder = _private_folder()
        if folder is None:
            return []
        _masters.add((config_file, destination))
    return [
        "-o",
        "ControlMaster=auto",
        "-o",
        f"ControlPath={folder}/%C",
        "-o",
        f"ControlPersist={defaults.SSH_MUX_PERSIST_S}",
    ]


def close_masters() -> None:
    """Ends every master connection this process started and removes its folder."""
    global _folder  # noqa: PLW0603
    with _lock:
        folder, masters = _folder, sorted(_masters, key=str)
        _folder = None
        _masters.clear()
    if folder is None:
        return
    for config_file, destination in masters:
        config = ["-F", config_file] if config_file else []
        if not any(folder.iterdir()):
            break
        try:
            subprocess.run(
                ["ssh", *config, "-o", f"ControlPath={folder}/%C", "-O", "exit", destination],
                capture_output=True,
                timeout=defaults.SSH_CONNECT_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            continue  # the master ends by itself once idle
    shutil.rmtree(folder, ignore_errors=True)
