"""Every number of a TOML settings file (a cluster file, `gateway serve --config`), checked
before its model reads the file, and the lines of the file's keys for the messages.

tomllib reads `nan`, `inf`, `1e400` (infinity) and a 400-digit integer as numbers, and no
setting is any of them; pydantic's `ge=0` lets infinity and 10**400 through. So each number goes
through `outside_numbers.checked_number` first and is refused in one line naming the file and
line and the field (docs/errors.md, class 9).
"""

from __future__ import annotations

import re
from typing import Any

from sparkrig.errors import ConfigError
from sparkrig.outside_numbers import OutsideNumberError, checked_number

Loc = tuple[str | int, ...]


def check_toml_numbers(value: object, *, text: str, source: str, loc: Loc = ()) -> None:
    """Every number under `value` (parsed from `text`, found at `loc` of the file), or the one
    line of the first that is not a setting."""
    if isinstance(value, dict):
        for key, inner in value.items():
            check_toml_numbers(inner, text=text, source=source, loc=(*loc, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            check_toml_numbers(inner, text=text, source=source, loc=(*loc, index))
    elif isinstance(value, int | float) and not isinstance(value, bool):
        where = f"{source} line {line}" if (line := line_of(loc, text)) else source
        try:
            checked_number(value, source=where, field=dotted(loc))
        except OutsideNumberError as exc:
            raise ConfigError(str(exc)) from exc


def dotted(loc: tuple[Any, ...]) -> str:
    """A model error's location as the file writes it: `nodes[1].executor`."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif not _is_validator(part):
            out += f".{part}" if out else str(part)
    return out


def line_of(loc: tuple[Any, ...], text: str) -> int | None:
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


def _lines_by_table(text: str) -> dict[tuple[Loc, str], int]:
    """(table path, key) -> first line; `[[nodes]]` entries are numbered like the model's list."""
    found: dict[tuple[Loc, str], int] = {}
    arrays: dict[str, int] = {}
    table: Loc = ()
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
    """pydantic names a validator in an error's location: `function-after[_check_names(), …]`."""
    return isinstance(part, str) and part.startswith("function-")
