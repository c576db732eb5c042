"""A real engine image for the container tests, built here with no registry and no base image:
`podman import` of a root filesystem holding the embedded llama-server and ggml-rpc-server at
their host paths and the libraries `ldd` names; the model comes in as a volume.

Also what this machine needs of podman, found by trying, not assumed: crun (podman's default
runtime) refuses a host with hybrid cgroups ("cgroups in hybrid mode not supported"), so runc
is used when crun fails; and without CAP_SYS_RESOURCE no limit can be raised above the host's
hard limit, so the tests' ulimits are the host's own.
"""

from __future__ import annotations

import io
import resource
import shutil
import subprocess
import tarfile
from collections.abc import Sequence
from pathlib import Path

from sparkrig.fabric.runner import CommandResult
from sparkrig.launch.executors import LocalExecutor

PODMAN = shutil.which("podman")
TRIVIAL_ARGV = ["/bin/true"]


def host_ulimits() -> dict[str, str]:
    """Limits any runtime may set here: memlock and stack at this machine's own, nofile and
    nproc at 4096 (podman's monitor runs under a lower nproc than the shell: under a hard limit
    of 96,362, 30,000 was accepted and 50,000 refused; lowering is always allowed)."""
    out = {"nofile": "4096:4096", "nproc": "4096:4096"}
    for name, kind in (("memlock", resource.RLIMIT_MEMLOCK), ("stack", resource.RLIMIT_STACK)):
        soft, hard = resource.getrlimit(kind)
        if hard == resource.RLIM_INFINITY:
            out[name] = "-1"
        else:
            soft = hard if soft == resource.RLIM_INFINITY else soft
            out[name] = f"{min(soft, hard)}:{hard}"
    return out


def _libraries(binary: Path) -> list[Path]:
    found = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=False)
    paths = []
    for line in found.stdout.splitlines():
        for word in line.split():
            if word.startswith("/") and Path(word).exists():
                paths.append(Path(word))
    return paths


def engine_rootfs_tar(
    binaries: list[Path], out: Path, extra: dict[str, bytes] | None = None
) -> Path:
    """A tar of a root filesystem: the binaries at their own paths, their libraries, /tmp."""
    with tarfile.open(out, "w") as tar:
        added: set[str] = set()
        for binary in binaries:
            for path in [binary, *_libraries(binary)]:
                resolved = path.resolve()
                name = str(path).lstrip("/")
                if name not in added:
                    tar.add(resolved, arcname=name, recursive=False)
                    added.add(name)
        for name in ("tmp",):
            info = tarfile.TarInfo(name)
            info.type = tarfile.DIRTYPE
            info.mode = 0o1777
            tar.addfile(info)
        for name, content in (extra or {}).items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
    return out


def podman(*args: str, root: Path | None = None) -> subprocess.CompletedProcess[str]:
    assert PODMAN is not None
    store = ["--root", str(root / "storage"), "--runroot", str(root / "run")] if root else []
    return subprocess.run(
        [PODMAN, *store, *args], capture_output=True, text=True, timeout=300, check=False
    )


def import_image(tar: Path, reference: str, root: Path | None = None) -> None:
    result = podman("import", "--quiet", str(tar), reference, root=root)
    assert result.returncode == 0, result.stderr


def working_runtime_args(reference: str) -> tuple[list[str] | None, str]:
    """The podman options under which a container runs on this machine, or None and why not."""
    ulimits = [
        arg for name, value in host_ulimits().items() for arg in ("--ulimit", f"{name}={value}")
    ]
    tried = []
    for runtime_args in ([], ["--runtime", "runc"]):
        result = podman(
            *runtime_args, "run", "--rm", "--network", "host", *ulimits, reference, *TRIVIAL_ARGV
        )
        if result.returncode == 0:
            return runtime_args, ""
        tried.append(
            f"{' '.join(runtime_args) or 'default runtime'}: {result.stderr.strip()[-200:]}"
        )
    return None, "; ".join(tried)


class OtherNode:
    """This machine as another node: podman on its own image store and, when given, the model
    path on a folder of its own (the same podman and sh, other state)."""

    description = "local, other store and disk"

    def __init__(self, store: Path, model_path: Path | None = None, own_model: Path | None = None):
        self.store = store
        self.paths = (str(model_path), str(own_model)) if model_path and own_model else None

    def argv_for(self, argv: Sequence[str]) -> list[str]:
        argv = list(argv)
        if self.paths is not None:
            argv = [arg.replace(*self.paths) for arg in argv]
        if argv and argv[0] == "podman":
            store = ["--root", f"{self.store}/storage", "--runroot", f"{self.store}/run"]
            argv = ["podman", *store, *argv[1:]]
        return argv

    def run(self, argv: Sequence[str], *, timeout: float | None = None) -> CommandResult:
        return LocalExecutor().run(self.argv_for(argv), timeout=timeout)
