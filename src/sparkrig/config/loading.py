"""Read a cluster file: TOML syntax errors and model errors become one-line `ConfigError`s that
name the file, the line when it can be found, and the fix."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from pydantic import ValidationError

from sparkrig.config.cluster import Cluster
from sparkrig.config.toml_numbers import check_toml_numbers, dotted, line_of
from sparkrig.errors import ConfigError
from sparkrig.json_files import read_text_file

_TOML_POSITION = re.compile(r"\(at line (\d+), column (\d+)\)")


def load_cluster(path: Path) -> Cluster:
    text = read_text_file(
        path,
        what="cluster file",
        error=ConfigError,
        fix="pass the path of a cluster TOML (see examples/)",
    )
    cluster = parse_cluster(text, source=str(path))
    if cluster.name is None:
        cluster = cluster.model_copy(update={"name": path.stem})
    return cluster


def parse_cluster(text: str, source: str = "<cluster>") -> Cluster:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(_toml_error_message(exc, source)) from exc
    check_toml_numbers(data, Cluster, text=text, source=source)
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
    location = dotted(first["loc"])
    reason = str(first["msg"]).removeprefix("Value error, ")
    where = f"{source} line {line}" if (line := line_of(first["loc"], text)) else source
    if first["type"] == "extra_forbidden":
        reason = f"unknown key {location!r} — remove it or fix its spelling"
    elif first["type"] == "missing":
        reason = f"{location} is missing — add it"
    elif " — " not in reason:
        reason = f"{reason} — fix {location}"
    return f"{where}: {location}: {reason}" if location else f"{where}: {reason}"
