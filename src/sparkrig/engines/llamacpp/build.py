"""Build llama.cpp's `llama-server` and `ggml-rpc-server` from the source inside a PyPI sdist.

No prebuilt binary can be downloaded on the machines sparkrig targets, but PyPI is reachable, and
the `llama-cpp-python` sdist vendors a complete llama.cpp tree. The binaries are cached per sdist
version and build flags; a second install finds them and does nothing.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, Field

from sparkrig import defaults
from sparkrig.errors import EngineBuildError, EngineNotFoundError
from sparkrig.json_files import read_model_file
from sparkrig.paths import cache_dir

SERVER_BINARY_ENV = "SPARKRIG_LLAMA_SERVER"
RECORD_NAME = "engine.json"
_VENDOR_PREFIX = "vendor/llama.cpp/"
_NINJA_STEP = re.compile(r"^\[(\d+)/(\d+)\]")
_MAKE_PERCENT = re.compile(r"^\[\s*(\d+)%\]")

ProgressCallback = Callable[[str, float | None], None]
"""Called with a phase name and a fraction done in [0, 1] (None when unknown)."""


class EngineInstall(BaseModel):
    """Where an embedded llama.cpp build lives and how it was made."""

    schema_version: int = 1
    source: str = Field(description="where the llama.cpp source came from")
    flags: list[str] = Field(description="CMake flags the binaries were configured with")
    bin_dir: Path = Field(description="folder holding llama-server and ggml-rpc-server")
    built_at: str | None = Field(default=None, description="UTC time the build finished")
    build_seconds: float | None = Field(default=None, description="wall time of the build")

    @property
    def server_binary(self) -> Path:
        return self.bin_dir / "llama-server"

    @property
    def rpc_binary(self) -> Path:
        return self.bin_dir / "ggml-rpc-server"


def _flags_id(flags: tuple[str, ...]) -> str:
    return hashlib.sha256("\n".join(flags).encode()).hexdigest()[:10]


def build_log_path() -> Path:
    """The log of the latest build, kept beside the cache so a failed build can be read."""
    folder = install_dir()
    return folder.parent / f"{folder.name}.build.log"


def install_dir() -> Path:
    """Folder of the cached build for the pinned sdist version and flags."""
    tag = f"{defaults.LLAMA_CPP_SDIST_VERSION}-{_flags_id(defaults.LLAMA_CPP_CMAKE_FLAGS)}"
    return cache_dir() / "engines" / "llama.cpp" / tag


def _is_executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def find_installed() -> EngineInstall | None:
    """The usable engine: `$SPARKRIG_LLAMA_SERVER` if set, else the cached build, else None."""
    override = os.environ.get(SERVER_BINARY_ENV)
    if override:
        binary = Path(override).expanduser()
        if not _is_executable(binary):
            raise EngineNotFoundError(
                f"{SERVER_BINARY_ENV}={override} is not an executable file — point it at a "
                f"llama-server binary or unset it to use `sparkrig engine install`"
            )
        return EngineInstall(source=f"${SERVER_BINARY_ENV}", flags=[], bin_dir=binary.parent)
    record = install_dir() / RECORD_NAME
    if not record.exists():
        return None
    found = read_model_file(
        record, EngineInstall, what="engine record", error=EngineNotFoundError,
        fix="move it aside and run `sparkrig engine install` to rebuild it",
    )  # fmt: skip
    return found if _is_executable(found.server_binary) else None


def require_installed() -> EngineInstall:
    found = find_installed()
    if found is None:
        raise EngineNotFoundError(
            "llama-server is not built yet — run `sparkrig engine install` (about 7 minutes on "
            f"2 cores), or set {SERVER_BINARY_ENV} to an existing llama-server binary"
        )
    return found


def install(progress: ProgressCallback, *, force: bool = False) -> EngineInstall:
    """Build and cache the engine unless a usable build is already there."""
    if not force and (found := find_installed()) is not None:
        return found
    target = install_dir()
    target.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    log = build_log_path()
    log.write_text("")
    with tempfile.TemporaryDirectory(prefix="llama-build-", dir=target.parent) as scratch:
        work = Path(scratch)
        sdist = _download_sdist(work, log, progress)
        source = _extract_vendored_tree(sdist, work / "llama.cpp", progress)
        build = _cmake_build(source, work / "build", log, progress)
        staged = work / "stage"
        (staged / "bin").mkdir(parents=True)
        for name in defaults.LLAMA_CPP_TARGETS:
            shutil.copy2(build / "bin" / name, staged / "bin" / name)
        record = EngineInstall(
            source=f"{defaults.LLAMA_CPP_SDIST}=={defaults.LLAMA_CPP_SDIST_VERSION} (sdist)",
            flags=list(defaults.LLAMA_CPP_CMAKE_FLAGS),
            bin_dir=target / "bin",
            built_at=datetime.now(UTC).isoformat(timespec="seconds"),
            build_seconds=round(time.monotonic() - started, 1),
        )
        (staged / RECORD_NAME).write_text(record.model_dump_json(indent=2))
        if target.exists():
            shutil.rmtree(target)
        staged.rename(target)  # atomic on one filesystem: a half build is never found
    progress("done", 1.0)
    return record


def _run_logged(argv: list[str], log: Path, cwd: Path | None = None) -> Iterator[str]:
    """Run a command, append its output to `log`, and yield each line as it arrives."""
    with (
        log.open("a") as sink,
        subprocess.Popen(
            argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        ) as proc,
    ):
        assert proc.stdout is not None
        for line in proc.stdout:
            sink.write(line)
            yield line
        sink.flush()
        if proc.wait() != 0:
            tail = log.read_text().strip().splitlines()[-3:]
            raise EngineBuildError(
                f"`{' '.join(argv[:3])} …` failed (exit {proc.returncode}): "
                f"{' | '.join(tail)} — see {log} for the whole log"
            )


def _download_sdist(work: Path, log: Path, progress: ProgressCallback) -> Path:
    progress(f"downloading {defaults.LLAMA_CPP_SDIST}=={defaults.LLAMA_CPP_SDIST_VERSION}", None)
    argv = [
        sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
        "--disable-pip-version-check", "--dest", str(work),
        f"{defaults.LLAMA_CPP_SDIST}=={defaults.LLAMA_CPP_SDIST_VERSION}",
    ]  # fmt: skip
    for _ in _run_logged(argv, log):
        pass
    found = sorted(work.glob("*.tar.gz"))
    if not found:
        raise EngineBuildError(
            f"pip left no sdist in {work} — check that PyPI is reachable from this machine"
        )
    return found[0]


def _extract_vendored_tree(sdist: Path, dest: Path, progress: ProgressCallback) -> Path:
    progress("extracting llama.cpp source", None)
    with tarfile.open(sdist) as archive:
        top = archive.getnames()[0].split("/")[0]
        prefix = f"{top}/{_VENDOR_PREFIX}"
        members = [m for m in archive.getmembers() if m.name.startswith(prefix)]
        if not members:
            raise EngineBuildError(
                f"{sdist.name} holds no {_VENDOR_PREFIX} — pin a llama-cpp-python version "
                "that vendors llama.cpp in sparkrig.defaults"
            )
        for member in members:
            member.name = member.name[len(prefix) :]
        archive.extractall(dest, members=[m for m in members if m.name], filter="data")
    return dest


def _cmake_build(source: Path, build: Path, log: Path, progress: ProgressCallback) -> Path:
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    if shutil.which("cmake") is None:
        raise EngineBuildError(
            "cmake is not installed — install it (`apt-get install cmake build-essential`)"
        )
    progress("configuring (cmake)", None)
    configure = ["cmake", "-S", str(source), "-B", str(build), *generator]
    for _ in _run_logged([*configure, *defaults.LLAMA_CPP_CMAKE_FLAGS], log):
        pass
    jobs = str(os.cpu_count() or 2)
    argv = ["cmake", "--build", str(build), "-j", jobs, "--target", *defaults.LLAMA_CPP_TARGETS]
    progress("compiling llama-server and ggml-rpc-server", 0.0)
    for line in _run_logged(argv, log):
        if step := _NINJA_STEP.match(line):
            progress("compiling llama-server and ggml-rpc-server",
                     int(step[1]) / int(step[2]))  # fmt: skip
        elif percent := _MAKE_PERCENT.match(line):
            progress("compiling llama-server and ggml-rpc-server", int(percent[1]) / 100)
    return build
