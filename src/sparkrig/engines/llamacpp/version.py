"""Read the version a llama-server binary reports about itself."""

from __future__ import annotations

import subprocess
from pathlib import Path

_VERSION_TIMEOUT_S = 15


def server_version(binary: Path) -> str | None:
    """What `llama-server --version` reports, e.g. `0.5.0-dev (build 1, commit 0c1e570)`."""
    try:
        done = subprocess.run(
            [str(binary), "--version"],
            capture_output=True,
            text=True,
            timeout=_VERSION_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in (done.stdout + done.stderr).splitlines():
        if line.startswith("version:"):
            return line.removeprefix("version:").strip()
    return None
