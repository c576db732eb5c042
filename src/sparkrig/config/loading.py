"""Read a cluster file: TOML syntax errors and model errors become one-line `ConfigError`s that
name the file, the line when it can be found, and the fix."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from sparkrig import defaults
from sparkrig.config.cluster import Cluster
from sparkrig.errors import ConfigError

_TOML_POSITION = re.compile(r"\(at line (\d+), column (\d+)\)")


def load_cluster(path: Path) -> Cluster:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise ConfigError(
            f"cluster file {path} does not exist — pass the path of a cluster TOML (see examples/)"
        ) from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read cluster file {path}: {exc} — check the path") from exc
    cluster = parse_cluster(text, source=str(path))
    if cluster.name is None:
        cluster = cluster.model_copy(update={"name": path.stem})
    return cluster


def parse_cluster(text: str, source: str = "<cluster>") -> Cluster:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(_toml_error_message(exc, source)) from exc
    later = {key: data.pop(key) for key in defaults.CLUSTER_LATER_TABLES if key in data}
    data["later_tables"] = later
    try:
        return Cluster.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_validation_message(exc, text, source)) from exc


def _toml_error_message(exc: tomllib.TOMLDecodeError, source: str) -> str:
    message = str(exc)
    position = _TOML_POSITION.search(message)
    reason = _TOML_POSITION.sub("", message).strip()
    if position is None:
        return f"{source}: not valid TOML: {reason} — fix the TOML syntax"
    line, column = position.groups()
    return f"{source} line {line}, column {column}: {reason} — fix the TOML syntax there"


def _validation_message(exc: ValidationError, text: str, source: str) -> str:
    first = exc.errors()[0]
    location = _dotted(first["loc"])
    reason = str(first["msg"]).removeprefix("Value error, ")
    where = f"{source} line {line}" if (line := _line_of(first["loc"], text)) else source
    if first["type"] == "extra_forbidden":
        reason = (
            f"unknown key {location!r} — remove it or fix its spelling (later stages' tables: "
            f"{', '.join(defaults.CLUSTER_LATER_TABLES)})"
        )
    elif first["type"] == "missing":
        reason = f"{location} is missing — add it"
    elif " — " not in reason:
        reason = f"{reason} — fix {location}"
    return f"{where}: {location}: {reason}" if location else f"{where}: {reason}"


def _dotted(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part not in {"function-after[_check_names(), Cluster]"}:
            out += f".{part}" if out else str(part)
    return out


def _line_of(loc: tuple[Any, ...], text: str) -> int | None:
    """The 1-based line of the key an error is about, when that key occurs once in the file."""
    keys = [part for part in loc if isinstance(part, str)]
    if not keys:
        return None
    key = keys[-1]
    if loc and isinstance(loc[-1], int) and key == "cables":
        # a bad cable string: find its text
        return None
    pattern = re.compile(rf"^\s*{re.escape(key)}\s*=")
    hits = [number for number, line in enumerate(text.splitlines(), 1) if pattern.match(line)]
    return hits[0] if len(hits) == 1 else None
