"""Read a cluster file: TOML syntax errors and model errors become one-line `ConfigError`s that
name the file, the line when it can be found, and the fix."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from sparkrig.config.cluster import Cluster
from sparkrig.errors import ConfigError
from sparkrig.json_files import read_text_file
from sparkrig.outside_numbers import OutsideNumberError, checked_number

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
    _check_numbers(data, (), text, source)
    try:
        return Cluster.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_validation_message(exc, text, source)) from exc


def _check_numbers(value: object, loc: tuple[str | int, ...], text: str, source: str) -> None:
    """Every number of the file, before the model sees it: TOML writes `nan`, `inf`, `1e400`
    (infinity) and `10**400` as an integer literal, and none of them is a setting anywhere."""
    if isinstance(value, dict):
        for key, inner in value.items():
            _check_numbers(inner, (*loc, key), text, source)
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            _check_numbers(inner, (*loc, index), text, source)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        where = f"{source} line {line}" if (line := _line_of(loc, text)) else source
        try:
            checked_number(value, source=where, field=_dotted(loc))
        except OutsideNumberError as exc:
            raise ConfigError(str(exc)) from exc


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
        reason = f"unknown key {location!r} — remove it or fix its spelling"
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
    """The 1-based line of the key an error is about: the key inside its own table when the
    path names one (`engine.kind`, `nodes[1].executor`), else the key when it occurs once."""
    path = [part for part in loc if isinstance(part, str | int) and not _is_validator(part)]
    keys = [part for part in path if isinstance(part, str)]
    if not keys:
        return None
    if loc and isinstance(loc[-1], int) and keys[-1] == "cables":
        return None  # a bad cable string: its text, not its key, is the problem
    table_lines = _lines_by_table(text)
    for cut in range(len(path), 0, -1):  # the deepest table that holds the key, then shallower
        table, key = tuple(path[: cut - 1]), path[cut - 1]
        if isinstance(key, str) and (line := table_lines.get((table, key))) is not None:
            return line
    pattern = re.compile(rf"^\s*{re.escape(keys[-1])}\s*=")
    hits = [number for number, line in enumerate(text.splitlines(), 1) if pattern.match(line)]
    return hits[0] if len(hits) == 1 else None


_HEADER = re.compile(r"^\s*(\[\[?)\s*([A-Za-z0-9_.-]+)\s*\]\]?")
_KEY = re.compile(r"^\s*([A-Za-z0-9_-]+)\s*=")


def _lines_by_table(text: str) -> dict[tuple[tuple[str | int, ...], str], int]:
    """(table path, key) -> first line; `[[nodes]]` entries are numbered like the model's list."""
    found: dict[tuple[tuple[str | int, ...], str], int] = {}
    arrays: dict[str, int] = {}
    table: tuple[str | int, ...] = ()
    for number, line in enumerate(text.splitlines(), 1):
        if header := _HEADER.match(line):
            name = header.group(2)
            parts: list[str | int] = list(name.split("."))
            if len(parts) > 1 and parts[0] in arrays:
                parts.insert(1, arrays[str(parts[0])])  # [nodes.env] is the last [[nodes]]'s
            if header.group(1) == "[[":
                arrays[name] = arrays.get(name, -1) + 1
                parts.append(arrays[name])
            table = tuple(parts)
            if len(table) > 1 and isinstance(table[-1], str):
                found.setdefault((table[:-1], table[-1]), number)
            continue
        if key := _KEY.match(line):
            found.setdefault((table, key.group(1)), number)
    return found


def _is_validator(part: Any) -> bool:
    return isinstance(part, str) and part.startswith("function-")
