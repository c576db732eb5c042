"""The embedded engine must run wherever it is built: self-test, fallbacks, crash names.

The CPUs that break a native build (AMX listed but refused by a VM, no AVX-512) are not this
machine's, so fake executables reproduce their behaviour (tests/engines/fake_engines.py); the
passing paths run the real llama-server behind them.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from sparkrig import defaults
from sparkrig.engines.llamacpp import build as build_module
from sparkrig.engines.llamacpp.build import (
    SERVER_BINARY_ENV,
    EngineInstall,
    EngineVariant,
    find_installed,
    install,
    install_dir,
    prove_external,
    require_installed,
)
from sparkrig.engines.llamacpp.cpu import cpu_features, native_build_key, notable_features
from sparkrig.engines.llamacpp.self_test import self_test
from sparkrig.errors import EngineBuildError, EngineNotFoundError
from sparkrig.paths import CACHE_ENV
from sparkrig.process_exit import from_returncode, from_shell_status
from tests.conftest import SPARKRIG
from tests.engines.fake_engines import write_fake

PORTABLE_FIX = "sparkrig engine install --portable"


@pytest.fixture
def empty_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv(CACHE_ENV, str(cache))
    monkeypatch.delenv(SERVER_BINARY_ENV, raising=False)
    return cache


def test_a_signal_is_named_with_its_meaning_and_fix() -> None:
    ended = from_returncode(-signal.SIGILL)
    assert ended.signal_name == "SIGILL"
    assert ended.describe().startswith("killed by SIGILL (illegal instruction")
    assert PORTABLE_FIX in (ended.fix() or "")
    assert ended.crashed
    assert from_shell_status(128 + signal.SIGILL) == ended
    assert from_returncode(1).describe() == "exited with status 1"
    assert from_shell_status(1).fix() is None
    assert not from_returncode(-signal.SIGTERM).crashed  # a stop, not a crash
    assert "out-of-memory" in from_returncode(-signal.SIGKILL).describe()


def test_the_native_cache_key_follows_the_cpu(
    empty_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = Path("/proc/cpuinfo").read_text()
    # another CPU than this one: AMX added where this one lacks it, removed where it has it
    without_amx = "\n".join(
        " ".join(w for w in line.split(" ") if not w.startswith("amx_"))
        if line.startswith("flags")
        else line
        for line in real.splitlines()
    )
    with_amx = without_amx.replace("flags\t\t:", "flags\t\t: amx_tile amx_int8 amx_bf16", 1)
    other = without_amx if "amx_tile" in cpu_features(real) else with_amx
    assert native_build_key(real) == native_build_key(real)
    assert native_build_key(real) != native_build_key(other)
    assert native_build_key(real, "x86_64") != native_build_key(real, "aarch64")
    assert {"amx_tile", "amx_int8"} <= set(notable_features(with_amx))
    assert cpu_features("") == frozenset()
    here = install_dir(EngineVariant.NATIVE)
    monkeypatch.setattr(build_module, "cpuinfo_text", lambda: other)
    assert install_dir(EngineVariant.NATIVE) != here  # another CPU: another build
    assert install_dir(EngineVariant.PORTABLE).parent == here.parent


def test_self_test_names_a_sigill_an_exit_a_hang_and_a_mute_engine(
    tmp_path: Path, bundled_model: Path
) -> None:
    sigill = self_test(
        write_fake(tmp_path / "a", "sigill"), bundled_model, tmp_path / "a.log", repack=True
    )
    assert not sigill.passed
    assert sigill.crashed
    assert sigill.signal_name == "SIGILL"
    assert "killed by SIGILL" in sigill.detail
    assert "CPU_REPACK" in sigill.detail  # the log's last lines come along
    exits = self_test(
        write_fake(tmp_path / "b", "exits"), bundled_model, tmp_path / "b.log", repack=True
    )
    assert (exits.passed, exits.crashed, exits.exit_code) == (False, False, 1)
    assert "exited with status 1" in exits.detail
    started = time.monotonic()
    hangs = self_test(
        write_fake(tmp_path / "c", "hangs"),
        bundled_model,
        tmp_path / "c.log",
        repack=True,
        timeout_s=2.0,
    )
    assert hangs.timed_out
    assert not hangs.crashed
    assert time.monotonic() - started < 15
    assert "within 2 s" in hangs.detail
    assert "-4" not in sigill.detail + exits.detail + hangs.detail
    mute = self_test(
        write_fake(tmp_path / "d", "mute"),
        bundled_model,
        tmp_path / "d.log",
        repack=True,
        timeout_s=20.0,
    )
    assert not mute.passed
    assert not mute.crashed
    assert mute.detail.startswith("healthy, but the completion failed: ")
    assert "without text" in mute.detail


@pytest.mark.engine
def test_a_binary_refused_with_repack_runs_without_it(
    tmp_path: Path, empty_cache: Path, engine: EngineInstall, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = write_fake(tmp_path / "vm", "amx_vm", engine.server_binary)
    monkeypatch.setenv(SERVER_BINARY_ENV, str(fake))
    proven = require_installed()
    assert proven.variant == EngineVariant.EXTERNAL
    assert not proven.repack
    assert proven.server_args == ["--no-repack"]
    assert proven.label == "llama.cpp external build, repack off"
    assert [o.passed for o in proven.self_tests] == [False, True]
    assert proven.self_tests[0].signal_name == "SIGILL"
    # proven once per file version: the record is found again without starting anything
    assert find_installed() == proven
    assert prove_external(fake) == proven


def test_a_binary_that_never_runs_here_names_sigill_and_the_fix(
    tmp_path: Path, empty_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SERVER_BINARY_ENV, str(write_fake(tmp_path / "x", "sigill")))
    with pytest.raises(EngineNotFoundError) as raised:
        require_installed()
    message = str(raised.value)
    assert "killed by SIGILL" in message
    assert PORTABLE_FIX in message
    assert f"unset {SERVER_BINARY_ENV}" in message
    assert "code -4" not in message


class FakeBuilder:
    """Stands in for the source build: writes one fake engine per variant."""

    def __init__(self, kinds: dict[EngineVariant, str], real: Path | None = None) -> None:
        self.kinds = kinds
        self.real = real
        self.built: list[EngineVariant] = []

    def __call__(self, variant: EngineVariant, work: Path, log: Path, progress: object) -> Path:
        self.built.append(variant)
        folder = work / "bin"
        write_fake(folder, self.kinds[variant], self.real)
        return folder


@pytest.mark.engine
def test_a_native_build_that_dies_by_sigill_falls_back_to_the_portable_build(
    empty_cache: Path, engine: EngineInstall
) -> None:
    builder = FakeBuilder(
        {EngineVariant.NATIVE: "sigill", EngineVariant.PORTABLE: "real"}, engine.server_binary
    )
    notes: list[str] = []
    record = install(lambda *_: None, note=notes.append, builder=builder)
    assert builder.built == [EngineVariant.NATIVE, EngineVariant.PORTABLE]
    assert record.variant == EngineVariant.PORTABLE
    # the portable build is the real one: it repacks where this CPU lets the real engine repack
    # (on a CPU with AMX the real engine itself needed --no-repack)
    assert record.repack == engine.repack
    repack = "on" if engine.repack else "off"
    assert record.label == f"llama.cpp portable build, repack {repack}"
    assert "-DGGML_NATIVE=OFF" in record.flags
    assert record.note is not None
    assert "native build: failed (repack on): killed by SIGILL" in record.note
    assert f"passed (repack {repack}, " in record.note.split("portable build: ", 1)[1]
    assert any("building the portable variant next" in line for line in notes)
    assert any(line.startswith("engine self-test: ") for line in notes)
    assert not (install_dir(EngineVariant.NATIVE) / "engine.json").exists()  # never recorded
    assert find_installed() == record
    assert install(lambda *_: None, builder=builder) == record  # found: nothing rebuilt
    assert len(builder.built) == 2


@pytest.mark.engine
def test_a_native_build_that_needs_no_repack_is_kept_with_repack_off(
    empty_cache: Path, engine: EngineInstall
) -> None:
    builder = FakeBuilder({EngineVariant.NATIVE: "amx_vm"}, engine.server_binary)
    record = install(lambda *_: None, builder=builder)
    assert builder.built == [EngineVariant.NATIVE]  # the cheap fallback was enough
    assert (record.variant, record.repack) == (EngineVariant.NATIVE, False)
    assert record.server_args == ["--no-repack"]


def test_an_engine_that_exits_is_not_rebuilt_for_another_cpu(empty_cache: Path) -> None:
    builder = FakeBuilder({EngineVariant.NATIVE: "exits", EngineVariant.PORTABLE: "exits"})
    with pytest.raises(EngineBuildError) as raised:
        install(lambda *_: None, builder=builder)
    assert builder.built == [EngineVariant.NATIVE]  # a portable build would not fix an exit
    assert "exited with status 1" in str(raised.value)
    assert find_installed() is None


def test_portable_asks_for_the_portable_build_only(empty_cache: Path) -> None:
    builder = FakeBuilder({EngineVariant.PORTABLE: "sigill"})
    with pytest.raises(EngineBuildError, match="portable build: failed"):
        install(lambda *_: None, portable=True, builder=builder)
    assert builder.built == [EngineVariant.PORTABLE]


def test_self_test_stops_what_it_started(tmp_path: Path, bundled_model: Path) -> None:
    fake = write_fake(tmp_path / "h", "hangs")
    self_test(fake, bundled_model, tmp_path / "h.log", repack=True, timeout_s=1.0)
    pid = int(fake.with_name("llama-server.pid").read_text())
    assert not Path(f"/proc/{pid}").exists()


def test_defaults_bound_the_self_test() -> None:
    assert 10 <= defaults.ENGINE_SELF_TEST_TIMEOUT_S <= 300


@pytest.mark.engine
def test_engine_info_shows_the_build_that_runs(
    tmp_path: Path, empty_cache: Path, engine: EngineInstall, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = write_fake(tmp_path / "vm", "amx_vm", engine.server_binary)
    monkeypatch.setenv(SERVER_BINARY_ENV, str(fake))
    require_installed()
    env = {**os.environ, "COLUMNS": "200"}
    shown = subprocess.run(
        [SPARKRIG, "engine", "info", "--json"], env=env, capture_output=True, text=True, check=True
    )
    info = json.loads(shown.stdout)
    assert info["label"] == "llama.cpp external build, repack off"
    assert info["repack"] is False
    assert info["self_tests"][0]["signal_name"] == "SIGILL"
    table = subprocess.run(
        [SPARKRIG, "engine", "info"], env=env, capture_output=True, text=True, check=True
    ).stdout
    assert "llama.cpp external build, repack off" in table
    assert "killed by SIGILL" in table


def test_engine_install_help_names_portable_and_rebuild() -> None:
    shown = subprocess.run(
        [SPARKRIG, "engine", "install", "--help"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert "--portable" in shown.stdout
    assert "--rebuild" in shown.stdout
