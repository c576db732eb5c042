"""The embedded engine: which build to use, how to get one, and the record of how it was proven.

Builds come from `source_build.py` (the llama.cpp tree vendored in a PyPI sdist). They are cached
per sdist version, build flags and (for a native build) CPU; a second install finds them and does
nothing. A build is recorded only after it answered a real completion here (`self_test.py`); when
the native build cannot run, the fallbacks are tried cheapest first (docs/engine.md).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from platform import machine

from pydantic import BaseModel, Field

from sparkrig import defaults
from sparkrig.engines.adapter import SelfTestOutcome
from sparkrig.engines.llamacpp.cpu import (
    cpu_model_name,
    cpuinfo_text,
    native_build_key,
    notable_features,
)
from sparkrig.engines.llamacpp.gguf_model import resolve_model
from sparkrig.engines.llamacpp.self_test import NO_REPACK_FLAG, self_test
from sparkrig.engines.llamacpp.source_build import ProgressCallback, build_from_source
from sparkrig.errors import EngineBuildError, EngineNotFoundError
from sparkrig.json_files import read_model_file, write_atomically
from sparkrig.paths import cache_dir
from sparkrig.process_exit import PORTABLE_REBUILD_COMMAND

SERVER_BINARY_ENV = "SPARKRIG_LLAMA_SERVER"
RECORD_NAME = "engine.json"
RECORD_SCHEMA_VERSION = 2

NoteCallback = Callable[[str], None]
"""Called with one line that says what happened (which build passed its self-test)."""
BinaryBuilder = Callable[["EngineVariant", Path, Path, ProgressCallback], Path]
"""Builds one variant in a scratch folder (variant, scratch, log, progress) and returns the
folder that holds llama-server and ggml-rpc-server."""


class EngineVariant(StrEnum):
    NATIVE = "native"  # compiled for every instruction this CPU advertises
    PORTABLE = "portable"  # ggml's baseline for the architecture, no CPU-specific extras
    EXTERNAL = "external"  # a binary the user named with $SPARKRIG_LLAMA_SERVER


VARIANT_FLAGS: dict[EngineVariant, tuple[str, ...]] = {
    EngineVariant.NATIVE: defaults.LLAMA_CPP_NATIVE_FLAGS,
    EngineVariant.PORTABLE: defaults.LLAMA_CPP_PORTABLE_FLAGS,
}


class EngineInstall(BaseModel):
    """Where an embedded llama.cpp build lives, how it was made, and how it proved it runs."""

    schema_version: int = RECORD_SCHEMA_VERSION
    source: str = Field(description="where the llama.cpp source came from")
    flags: list[str] = Field(description="CMake flags the binaries were configured with")
    bin_dir: Path = Field(description="folder holding llama-server and ggml-rpc-server")
    variant: EngineVariant = Field(default=EngineVariant.NATIVE, description="which build")
    repack: bool = Field(
        default=True,
        description="llama.cpp's CPU weight repacking; off (--no-repack) when the self-test "
        "only passed without it",
    )
    cpu: str = Field(default="", description="the CPU the build was proven on, and its features")
    self_tests: list[SelfTestOutcome] = Field(
        default_factory=list, description="every self-test tried, in order; the last passed"
    )
    note: str | None = Field(default=None, description="what fell back, in one line")
    built_at: str | None = Field(default=None, description="UTC time the build finished")
    build_seconds: float | None = Field(default=None, description="wall time of the build")

    @property
    def server_binary(self) -> Path:
        return self.bin_dir / "llama-server"

    @property
    def rpc_binary(self) -> Path:
        return self.bin_dir / "ggml-rpc-server"

    @property
    def server_args(self) -> list[str]:
        """Arguments every llama-server started from this build needs to run here."""
        return [] if self.repack else [NO_REPACK_FLAG]

    @property
    def label(self) -> str:
        """What receipts and reports show: the build that produced the figures."""
        return f"llama.cpp {self.variant.value} build, repack {'on' if self.repack else 'off'}"


def variant_flags(variant: EngineVariant) -> list[str]:
    """Every CMake flag of one build variant: the shared ones, then the variant's own."""
    return [*defaults.LLAMA_CPP_CMAKE_FLAGS, *VARIANT_FLAGS[variant]]


def _flags_id(flags: list[str]) -> str:
    return hashlib.sha256("\n".join(flags).encode()).hexdigest()[:10]


def build_log_path(variant: EngineVariant = EngineVariant.NATIVE) -> Path:
    """The log of the latest build, kept beside the cache so a failed build can be read."""
    folder = install_dir(variant)
    return folder.parent / f"{folder.name}.build.log"


def install_dir(variant: EngineVariant = EngineVariant.NATIVE) -> Path:
    """Folder of the cached build for the pinned sdist version, flags and, for a native build,
    this CPU: a cache shared between machines with other CPUs rebuilds instead of crashing."""
    flags = variant_flags(variant)
    cpu = native_build_key(cpuinfo_text()) if variant == EngineVariant.NATIVE else machine()
    tag = f"{defaults.LLAMA_CPP_SDIST_VERSION}-{_flags_id(flags)}-{variant.value}-{cpu}"
    return cache_dir() / "engines" / "llama.cpp" / tag


def _is_executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def _read_record(path: Path) -> EngineInstall | None:
    """A cached record, or None when absent or from an older sparkrig (then rebuilt)."""
    if not path.exists():
        return None
    found = read_model_file(
        path,
        EngineInstall,
        what="engine record",
        error=EngineNotFoundError,
        fix="move it aside and run `sparkrig engine install` to rebuild it",
    )
    if found.schema_version != RECORD_SCHEMA_VERSION or not _is_executable(found.server_binary):
        return None
    return found


def recorded_build(variant: EngineVariant) -> EngineInstall | None:
    """The proven build of `variant` for this machine, if one is cached."""
    return _read_record(install_dir(variant) / RECORD_NAME)


def _override_binary() -> Path | None:
    override = os.environ.get(SERVER_BINARY_ENV)
    if not override:
        return None
    binary = Path(override).expanduser()
    if not _is_executable(binary):
        raise EngineNotFoundError(
            f"{SERVER_BINARY_ENV}={override} is not an executable file — point it at a "
            f"llama-server binary or unset it to use `sparkrig engine install`"
        )
    return binary


def find_installed() -> EngineInstall | None:
    """The engine to use, without running anything: `$SPARKRIG_LLAMA_SERVER` if set (with its
    self-test result when one is cached), else the native build for this CPU, else the portable
    build, else None."""
    if (binary := _override_binary()) is not None:
        return _read_record(_external_record_path(binary)) or _external_install(binary)
    for variant in (EngineVariant.NATIVE, EngineVariant.PORTABLE):
        if (found := recorded_build(variant)) is not None:
            return found
    return None


def require_installed() -> EngineInstall:
    """The engine to use, proven to run here (a named binary is self-tested once)."""
    if (binary := _override_binary()) is not None:
        return prove_external(binary)
    found = find_installed()
    if found is None:
        raise EngineNotFoundError(
            "llama-server is not built yet — run `sparkrig engine install` (about 7 minutes on "
            f"2 cores), or set {SERVER_BINARY_ENV} to an existing llama-server binary"
        )
    return found


def install(
    progress: ProgressCallback,
    *,
    force: bool = False,
    portable: bool = False,
    note: NoteCallback = lambda _: None,
    builder: BinaryBuilder | None = None,
) -> EngineInstall:
    """Build, self-test and cache the engine unless a proven build is already there.

    The native build comes first; if it cannot run here (killed by a signal such as SIGILL), the
    same binary is tried without weight repacking, then a portable build, each self-tested. Only
    a build that answered a completion is recorded. `portable` skips the native build;
    `builder` replaces the source build (tests give one that writes fake binaries)."""
    if (binary := _override_binary()) is not None:
        return prove_external(binary, note=note)
    if not force:
        found = recorded_build(EngineVariant.PORTABLE) if portable else find_installed()
        if found is not None:
            return found
    variants = [EngineVariant.PORTABLE] if portable else [*VARIANT_FLAGS]
    tried: list[str] = []
    for variant in variants:
        record, outcomes = _build_and_prove(variant, progress, tried, builder or _from_source)
        if record is not None:
            note(f"engine self-test: {record.note}")
            return record
        if not any(outcome.crashed for outcome in outcomes):
            break  # an exit or a hang: a build with other CPU code would not fix it
        if variant != variants[-1]:
            note(f"engine self-test: {tried[-1]}; building the portable variant next")
    log = outcomes[-1].log_path if outcomes else build_log_path()
    raise EngineBuildError(
        f"no llama-server build runs on this machine: {'; '.join(tried)} — see {log}, and "
        f"report it with `sparkrig engine info --json`"
    )


def _build_and_prove(
    variant: EngineVariant, progress: ProgressCallback, tried: list[str], builder: BinaryBuilder
) -> tuple[EngineInstall | None, list[SelfTestOutcome]]:
    target = install_dir(variant)
    target.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    log = build_log_path(variant)
    log.write_text("")
    flags = variant_flags(variant)
    with tempfile.TemporaryDirectory(prefix="llama-build-", dir=target.parent) as scratch:
        work = Path(scratch)
        built = builder(variant, work, log, progress)
        staged = work / "stage"
        (staged / "bin").mkdir(parents=True)
        for name in defaults.LLAMA_CPP_TARGETS:
            shutil.copy2(built / name, staged / "bin" / name)
        progress(f"self-testing the {variant.value} build on the bundled model", None)
        seconds = round(time.monotonic() - started, 1)
        outcomes = prove_binary(staged / "bin" / "llama-server", target)
        tried.append(f"{variant.value} build: " + ", then ".join(o.summary() for o in outcomes))
        if not outcomes[-1].passed:
            return None, outcomes
        record = EngineInstall(
            source=f"{defaults.LLAMA_CPP_SDIST}=={defaults.LLAMA_CPP_SDIST_VERSION} (sdist)",
            flags=flags,
            bin_dir=target / "bin",
            variant=variant,
            repack=outcomes[-1].repack,
            cpu=_cpu_description(),
            self_tests=outcomes,
            note="; ".join(tried),
            built_at=datetime.now(UTC).isoformat(timespec="seconds"),
            build_seconds=seconds,
        )
        for outcome in record.self_tests:  # the binary moves with the folder below
            outcome.binary = str(record.server_binary)
        write_atomically(record, staged / RECORD_NAME)
        if target.exists():
            shutil.rmtree(target)
        staged.rename(target)  # atomic on one filesystem: a half build is never found
    progress("done", 1.0)
    return record, outcomes


def prove_binary(binary: Path, log_stem: Path) -> list[SelfTestOutcome]:
    """Self-test with repacking; if that fails, the same binary without it."""
    model = resolve_model(None)
    outcomes = []
    for repack in (True, False):
        log = log_stem.with_name(
            f"{log_stem.name}.self-test-repack-{'on' if repack else 'off'}.log"
        )
        outcomes.append(self_test(binary, model, log, repack=repack))
        if outcomes[-1].passed:
            break
    return outcomes


def _cpu_description() -> str:
    text = cpuinfo_text()
    features = " ".join(notable_features(text)) or "no notable features listed"
    return f"{cpu_model_name(text)} ({machine()}: {features})"


def _external_record_path(binary: Path) -> Path:
    try:
        stat = binary.stat()
        stamp = f"{binary.resolve()}:{stat.st_size}:{stat.st_mtime_ns}"
    except OSError:
        stamp = str(binary)
    digest = hashlib.sha256(stamp.encode()).hexdigest()[:16]
    return cache_dir() / "engines" / "external" / f"{digest}.json"


def _external_install(binary: Path) -> EngineInstall:
    return EngineInstall(
        source=f"${SERVER_BINARY_ENV}",
        flags=[],
        bin_dir=binary.parent,
        variant=EngineVariant.EXTERNAL,
        cpu=_cpu_description(),
    )


def prove_external(binary: Path, *, note: NoteCallback = lambda _: None) -> EngineInstall:
    """Self-test a binary the user named (once per file version); never rebuild it."""
    record_path = _external_record_path(binary)
    if (found := _read_record(record_path)) is not None and found.self_tests:
        return found
    outcomes = prove_binary(binary, record_path.with_suffix(""))
    if not outcomes[-1].passed:
        first = outcomes[0].process_exit
        fix = (
            f"unset {SERVER_BINARY_ENV} and build a portable engine: `{PORTABLE_REBUILD_COMMAND}`"
            if first is not None and first.illegal_instruction
            else f"fix that binary or unset {SERVER_BINARY_ENV} to use `sparkrig engine install`"
        )
        raise EngineNotFoundError(
            f"{SERVER_BINARY_ENV}={binary} does not run here: "
            f"{', then '.join(o.summary() for o in outcomes)} — {fix} "
            f"(log: {outcomes[-1].log_path})"
        )
    record = _external_install(binary)
    record.repack = outcomes[-1].repack
    record.self_tests = outcomes
    record.note = ", then ".join(o.summary() for o in outcomes)
    note(f"engine self-test of {binary}: {record.note}")
    write_atomically(record, record_path)
    return record


def _from_source(variant: EngineVariant, work: Path, log: Path, progress: ProgressCallback) -> Path:
    return build_from_source(variant.value, variant_flags(variant), work, log, progress)
