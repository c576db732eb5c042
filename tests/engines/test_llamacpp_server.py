"""The llama-server command line, and the engine the build left behind."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sparkrig.engines.llamacpp.build import SERVER_BINARY_ENV, EngineInstall, find_installed
from sparkrig.engines.llamacpp.server import (
    LlamaServerSpec,
    SpeculativeOptions,
    llama_server_argv,
)
from sparkrig.engines.llamacpp.version import server_version
from sparkrig.errors import EngineNotFoundError


def spec(**overrides: object) -> LlamaServerSpec:
    base: dict[str, object] = {
        "binary": Path("/opt/llama-server"),
        "model": Path("/m/model.gguf"),
        "alias": "m",
        "port": 8123,
    }
    return LlamaServerSpec.model_validate({**base, **overrides})


def flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_argv_enables_batching_metrics_and_slots() -> None:
    argv = llama_server_argv(spec())
    assert flag(argv, "--parallel") == "4"
    assert flag(argv, "--host") == "127.0.0.1"
    assert flag(argv, "--port") == "8123"
    assert {"--metrics", "--slots", "--cont-batching"} <= set(argv)
    assert "--spec-type" not in argv


def test_draft_speculation_drafts_with_the_served_model_by_default() -> None:
    argv = llama_server_argv(spec(speculative=SpeculativeOptions(spec_type="draft-simple")))
    assert flag(argv, "--spec-type") == "draft-simple"
    assert flag(argv, "--spec-draft-model") == "/m/model.gguf"


def test_ngram_speculation_needs_no_draft_model_and_synth_rates_pass_through() -> None:
    options = SpeculativeOptions(spec_type="ngram-simple", synth_rates=[0.9, 0.5, 0.25])
    argv = llama_server_argv(spec(speculative=options))
    assert "--spec-draft-model" not in argv
    assert flag(argv, "--spec-synth-rates") == "0.9,0.5,0.25"


def test_built_engine_reports_its_version(engine: EngineInstall) -> None:
    assert engine.server_binary.is_file()
    assert engine.rpc_binary.is_file()
    version = server_version(engine.server_binary)
    assert version is not None
    assert "commit" in version


def test_binary_override_must_be_executable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SERVER_BINARY_ENV, str(tmp_path / "absent"))
    with pytest.raises(EngineNotFoundError, match=SERVER_BINARY_ENV):
        find_installed()
    binary = tmp_path / "llama-server"
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    monkeypatch.setenv(SERVER_BINARY_ENV, str(binary))
    found = find_installed()
    assert found is not None
    assert found.server_binary == binary
    assert os.access(found.server_binary, os.X_OK)
