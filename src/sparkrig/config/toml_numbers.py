"""Every number of a TOML settings file (a cluster file, `gateway serve --config`), checked
before its model reads the file, and the lines of the file's keys for the messages.

tomllib reads `nan`, `inf`, `1e400` (infinity) and a 400-digit integer as numbers, and no
setting is any of them; pydantic's `ge=0` lets infinity and 10**400 through. So each number goes
through `outside_numbers.checked_number` first and is refused in one line naming the file and
line and the field (docs/errors.md, class 9).
"""

from __future__ import annotations

import re
from types import UnionType
from typing import Annotated, Any, Union, cast, get_args, get_origin

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from sparkrig.errors import ConfigError
from sparkrig.outside_numbers import Number, OutsideNumberError, checked_number

Loc = tuple[str | int, ...]


def check_toml_numbers(value: object, model: Any, *, text: str, source: str, loc: Loc = ()) -> None:
    """Every number under `value` (parsed from `text`, found at `loc` of the file, where
    `model` — a pydantic model or a type — declares it), or the one line of the first that is
    not finite or not in its field's range."""
    _walk(value, _members(model), text=text, source=source, loc=loc)


Members = list[tuple[Any, tuple[Any, ...]]]
"""The types a place of the file may hold, each with the constraints declared on it."""


def _walk(value: object, members: Members, *, text: str, source: str, loc: Loc) -> None:
    if isinstance(value, dict):
        for key, inner in value.items():
            _walk(inner, _inside(members, key), text=text, source=source, loc=(*loc, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            _walk(inner, _inside(members, index), text=text, source=source, loc=(*loc, index))
    elif isinstance(value, int | float) and not isinstance(value, bool):
        line = line_of(loc, text)
        where = f"{source} line {line}" if line else source
        numeric = [(bare, meta) for bare, meta in members if bare in (int, float)]
        bounds = _bounds(numeric[0][1]) if len(numeric) == 1 else {}
        whole = bool(numeric) and all(bare is int for bare, _ in numeric)
        try:
            checked_number(
                value,
                source=where,
                field=dotted(loc),
                # an int field takes 3.0 as 3 (pydantic's lax mode); 3.5 it refuses itself
                whole=whole and not (isinstance(value, float) and value.is_integer()),
                written=_written(loc, text, line),
                **bounds,
            )
        except OutsideNumberError as exc:
            raise ConfigError(str(exc)) from exc


def _members(annotation: Any, meta: tuple[Any, ...] = ()) -> Members:
    """`annotation`'s union members, each with its `Annotated` constraints (and `meta`)."""
    if get_origin(annotation) is Annotated:
        bare, *more = get_args(annotation)
        return _members(bare, (*meta, *more))
    if get_origin(annotation) in (Union, UnionType):
        return [member for arg in get_args(annotation) for member in _members(arg, meta)]
    return [(annotation, meta)]


def _inside(members: Members, key: str | int) -> Members:
    """What the model declares at `key` of a place holding `members`: a model's field, a dict's
    value, a list's item; nothing where the model does not say (an unknown key)."""
    out: Members = []
    for bare, _ in members:
        origin: Any = get_origin(bare)
        args = get_args(bare)
        if isinstance(bare, type) and issubclass(bare, BaseModel) and isinstance(key, str):
            field = _field(bare, key)
            if field is not None:
                out += _members(field.annotation, tuple(field.metadata))
        elif origin is dict and isinstance(key, str) and len(args) == 2:
            out += _members(args[1])
        elif origin in (list, set, frozenset) and isinstance(key, int) and args:
            out += _members(args[0])
        elif origin is tuple and isinstance(key, int) and args:
            item = args[0] if len(args) == 2 and args[1] is Ellipsis else None
            item = item if item is not None else (args[key] if key < len(args) else None)
            out += _members(item) if item is not None else []
    return out


def _field(model: type[BaseModel], key: str) -> FieldInfo | None:
    if key in model.model_fields:
        return model.model_fields[key]
    return next((f for f in model.model_fields.values() if f.alias == key), None)


def _bounds(meta: tuple[Any, ...]) -> dict[str, Number]:
    """A field's ge/gt/le/lt as `checked_number`'s minimum/above/maximum/below."""
    found: dict[str, Number] = {}
    for item in meta:
        if isinstance(item, FieldInfo):
            found.update(_bounds(tuple(item.metadata)))
        elif isinstance(item, annotated_types.Ge):
            found["minimum"] = cast(Number, item.ge)
        elif isinstance(item, annotated_types.Gt):
            found["above"] = cast(Number, item.gt)
        elif isinstance(item, annotated_types.Le):
            found["maximum"] = cast(Number, item.le)
        elif isinstance(item, annotated_types.Lt):
            found["below"] = cast(Number, item.lt)
    return found


_VALUE = r"\s*=\s*([+-]?[0-9A-Za-z_.+-]+)"


def _written(loc: Loc, text: str, line: int | None) -> str | None:
    """The value of `loc`'s key as its line writes it (`1e400`, that tomllib reads as inf)."""
    if line is None or not loc or not isinstance(loc[-1], str):
        return None
    found = re.search(rf"(?:^|[\s,{{]){re.escape(loc[-1])}{_VALUE}", text.splitlines()[line - 1])
    return found.group(1) if found else None


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
