"""The bundled model is found without importing its package, and checked before use."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkrig import defaults
from sparkrig.engines.llamacpp import gguf_model
from sparkrig.errors import ModelError


def test_bundled_model_is_found_and_verified() -> None:
    path = gguf_model.resolve_model(None)
    assert path.name == defaults.BUNDLED_MODEL_FILE
    assert gguf_model.sha256_of(path) == defaults.BUNDLED_MODEL_SHA256


def test_a_wrong_checksum_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(defaults, "BUNDLED_MODEL_SHA256", "0" * 64)
    with pytest.raises(ModelError, match="reinstall"):
        gguf_model.resolve_model(None)


def test_user_gguf_is_used_as_given(tmp_path: Path) -> None:
    model = tmp_path / "tiny.gguf"
    model.write_bytes(b"GGUF" + b"\0" * 16)
    assert gguf_model.resolve_model(model) == model.resolve()


@pytest.mark.parametrize(
    ("content", "message"), [(None, "does not exist"), (b"PK\x03\x04", "not a GGUF")]
)
def test_bad_model_paths(tmp_path: Path, content: bytes | None, message: str) -> None:
    model = tmp_path / "model.gguf"
    if content is not None:
        model.write_bytes(content)
    with pytest.raises(ModelError, match=message):
        gguf_model.resolve_model(model)


def test_a_folder_is_not_a_model(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="not a file"):
        gguf_model.resolve_model(tmp_path)
