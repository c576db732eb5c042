"""Compile llama.cpp's `llama-server` and `ggml-rpc-server` from the source vendored in a PyPI
sdist: download, extract, configure, build, with progress from the build's own output.

No prebuilt binary can be downloaded on the machines sparkrig targets, but PyPI is reachable, and
the `llama-cpp-python` sdist vendors a complete llama.cpp tree.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Callable, Iterator
from pathlib import Path

from sparkrig import defaults
from sparkrig.errors import EngineBuildError
from sparkrig.outside_numbers import int_or_none
from sparkrig.process_exit import from_returncode

_VENDOR_PREFIX = "vendor/llama.cpp/"
_NINJA_STEP = re.compile(r"^\[(\d+)/(\d+)\]")
_MAKE_PERCENT = re.compile(r"^\[\s*(\d+)%\]")

ProgressCallback = Callable[[str, float | None], None]
"""Called with a phase name and a fraction done in [0, 1] (None when unknown)."""


def build_from_source(
    label: str, flags: list[str], work: Path, log: Path, progress: ProgressCallback
) -> Path:
    """Download the sdist, configure with `flags` and compile in `work`; the folder holding the
    built binaries. `label` names the build in the progress line."""
    sdist = _download_sdist(work, log, progress)
    source = _extract_vendored_tree(sdist, work / "llama.cpp", progress)
    build = _cmake_build(source, work / "build", log, progress, flags=flags, label=label)
    return build / "bin"


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
                f"`{' '.join(argv[:3])} …` {from_returncode(proc.returncode).describe()}: "
                f"{' | '.join(tail)} — see {log} for the whole log"
            )


def _download_sdist(work: Path, log: Path, progress: ProgressCallback) -> Path:
    progress(f"downloading {defaults.LLAMA_CPP_SDIST}=={defaults.LLAMA_CPP_SDIST_VERSION}", None)
    argv = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--no-binary",
        ":all:",
        "--disable-pip-version-check",
        "--dest",
        str(work),
        f"{defaults.LLAMA_CPP_SDIST}=={defaults.LLAMA_CPP_SDIST_VERSION}",
    ]
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


def _cmake_build(
    source: Path,
    build: Path,
    log: Path,
    progress: ProgressCallback,
    *,
    flags: list[str],
    label: str,
) -> Path:
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    if shutil.which("cmake") is None:
        raise EngineBuildError(
            "cmake is not installed — install it (`apt-get install cmake build-essential`)"
        )
    progress("configuring (cmake)", None)
    configure = ["cmake", "-S", str(source), "-B", str(build), *generator]
    for _ in _run_logged([*configure, *flags], log):
        pass
    jobs = str(os.cpu_count() or 2)
    argv = ["cmake", "--build", str(build), "-j", jobs, "--target", *defaults.LLAMA_CPP_TARGETS]
    phase = f"compiling llama-server and ggml-rpc-server ({label})"
    progress(phase, 0.0)
    for line in _run_logged(argv, log):
        if step := _NINJA_STEP.match(line):
            done, total = int_or_none(step[1], minimum=0), int_or_none(step[2], minimum=1)
            if done is not None and total is not None:
                progress(phase, min(done / total, 1.0))
        elif (percent := _MAKE_PERCENT.match(line)) and (
            share := int_or_none(percent[1], minimum=0, maximum=100)
        ) is not None:
            progress(phase, share / 100)
    return build
