"""Pydantic models to and from JSON files: written atomically, read with one-line errors.

Every receipt, record and baseline goes through here, so an interrupted write never leaves half
a file, and a wrong or damaged file is named with the fix.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from sparkrig.errors import UsageError

Model = TypeVar("Model", bound=BaseModel)


def write_atomically(model: BaseModel, path: Path) -> Path:
    """Write beside the target, then rename over it: a reader sees the old or the new file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_name(path.name + ".tmp")
    scratch.write_text(model.model_dump_json(indent=2))
    scratch.replace(path)
    return path


def read_receipt(
    path: Path, model: type[Model], *, kind: str, schema_version: int, written_by: str
) -> Model:
    """A receipt of `kind` at `schema_version`; `written_by` names the command that writes it
    (`sparkrig bench`), for the fix in each message."""
    noun = kind.removeprefix("sparkrig-")
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError as exc:
        raise UsageError(f"receipt {path} does not exist — check the path") from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path} is not JSON — pass a receipt written by `{written_by}`") from exc
    if not isinstance(raw, dict) or raw.get("kind") != kind:
        raise UsageError(f"{path} is not a sparkrig {noun} receipt — pass one from `{written_by}`")
    if raw.get("schema_version") != schema_version:
        raise UsageError(
            f"{path} has {noun} receipt schema {raw.get('schema_version')}, this sparkrig reads "
            f"{schema_version} — use the sparkrig version that wrote it, or rerun `{written_by}`"
        )
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise UsageError(
            f"{path} is a damaged {noun} receipt ({exc.error_count()} invalid fields) — rerun "
            f"`{written_by}`"
        ) from exc
