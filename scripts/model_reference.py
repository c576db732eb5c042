"""Write the generated tables of two reference pages from the models' own field descriptions, so
neither can drift from what sparkrig reads and writes: docs/cluster-file.md's table of every
cluster-file key, with its default (src/sparkrig/config/), and docs/receipts.md's table of each
receipt kind's fields, two levels deep, with their JSON types (the kinds of
src/sparkrig/report/receipt_kinds.py). `make docs` runs it; tests/docs/test_cluster_file_doc.py
and tests/docs/test_receipts_doc.py fail while a page is stale."""

from __future__ import annotations

import json
import sys
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from pydantic import AwareDatetime, BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from sparkrig.config.cluster import Cable, Cluster
from sparkrig.report.receipt_kinds import RECEIPT_MODELS

ROOT = Path(__file__).resolve().parents[1]
LEAVES = (Cable,)  # written as strings in the cluster file
RECEIPT_DEPTH = 2  # `points[].summary`, not `points[].summary.median`

Row = tuple[str, str, str]  # key, the second column (default or type), description


class Page(NamedTuple):
    """A page and the generated block between its two markers."""

    path: Path
    start: str
    end: str
    render: Callable[[], str]


def _models(annotation: object) -> list[tuple[type[BaseModel], str]]:
    """The models a field holds, each with how it is written: a table, an array, a map."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [] if issubclass(annotation, LEAVES) else [(annotation, "")]
    if origin is list:
        return [(model, "[]") for model, _ in _models(args[0])]
    if origin is dict:
        return [(model, ".NAME") for model, _ in _models(args[1])]
    if origin in (typing.Union, types.UnionType):
        return [found for arg in args for found in _models(arg)]
    return []


def _default(field: FieldInfo) -> str:
    if field.default is PydanticUndefined:
        return "required" if field.default_factory is None else "—"
    if field.default is None:
        return "—"
    value = field.default
    if isinstance(value, bool):
        return "true" if value else "false"
    return f"`{value}`"


_JSON_NAMES: dict[object, tuple[str, str]] = {
    str: ("string", "strings"),
    int: ("integer", "integers"),
    float: ("number", "numbers"),
    bool: ("boolean", "booleans"),
    AwareDatetime: ("time with zone (ISO 8601)", "times with zone (ISO 8601)"),
    typing.Any: ("any JSON value", "any JSON values"),
}


def json_type(annotation: object, *, plural: bool = False) -> str:
    """How a field's value is written in a receipt's JSON: `string or null`, `array of
    objects`, `map of integers` (a map's keys are strings)."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        return " or ".join(f"`{json.dumps(arg)}`" for arg in args)
    if origin in (typing.Union, types.UnionType):
        kept = [arg for arg in args if arg is not type(None)]
        names = [json_type(arg) for arg in kept] + (["null"] if len(kept) < len(args) else [])
        return f"({' or '.join(names)})" if plural else " or ".join(names)
    if origin is list:
        return f"{'arrays' if plural else 'array'} of {json_type(args[0], plural=True)}"
    if origin is dict:
        return f"{'maps' if plural else 'map'} of {json_type(args[1], plural=True)}"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "objects" if plural else "object"
    if annotation in _JSON_NAMES:
        one, many = _JSON_NAMES[annotation]
        return many if plural else one
    raise TypeError(f"no JSON name for {annotation!r} — add one to json_type")


def _json_type_of(field: FieldInfo) -> str:
    return json_type(field.annotation)


def rows(
    model: type[BaseModel] = Cluster,
    prefix: str = "",
    *,
    depth: int | None = None,
    second: Callable[[FieldInfo], str] = _default,
) -> list[Row]:
    """Every field of `model` and of the models it holds, `depth` levels down (all of them when
    None), each as (key, `second`'s column, description)."""
    found = []
    done: set[type[BaseModel]] = set()
    for name, field in model.model_fields.items():
        key = f"{prefix}{field.alias or name}"
        description = (field.description or "").replace("|", "\\|").replace("\n", " ")
        found.append((key, second(field), description))
        if key == "profiles":  # the keys of [profile] again, under a name
            found[-1] = (
                key,
                "—",
                f"{description}: each `[profiles.NAME]` takes `[profile]`'s keys",
            )
            continue
        if depth == 1:
            continue
        for sub, shape in _models(field.annotation):
            if sub not in done:
                done.add(sub)
                below = None if depth is None else depth - 1
                found.extend(rows(sub, f"{key}{shape}.", depth=below, second=second))
    return found


def receipt_rows(model: type[BaseModel]) -> list[Row]:
    """The fields a receipt kind's table shows: two levels, each with its JSON type."""
    return rows(model, depth=RECEIPT_DEPTH, second=_json_type_of)


def render_cluster_keys() -> str:
    lines = ["| key | default | what it sets |", "|---|---|---|"]
    lines += [f"| `{key}` | {default} | {what} |" for key, default, what in rows()]
    return "\n".join(lines)


def render_receipts() -> str:
    sections = []
    for kind, model in RECEIPT_MODELS.items():
        schema = model.current_schema()
        older = ", ".join(str(version) for version in sorted(model.UPGRADES))
        reads = f"; files of schema {older} are upgraded as they load" if older else ""
        lines = [
            f"### `{kind}`",
            "",
            f"Written by `{model.WRITTEN_BY}`; schema {schema}{reads}.",
            "",
            "| field | type | what it holds |",
            "|---|---|---|",
        ]
        lines += [f"| `{key}` | {written} | {what} |" for key, written, what in receipt_rows(model)]
        sections.append("\n".join(lines))
    return "\n\n".join(sections)


CLUSTER_FILE = Page(
    ROOT / "docs" / "cluster-file.md",
    "<!-- cluster-keys:start -->",
    "<!-- cluster-keys:end -->",
    render_cluster_keys,
)
RECEIPTS = Page(
    ROOT / "docs" / "receipts.md",
    "<!-- receipts:start -->",
    "<!-- receipts:end -->",
    render_receipts,
)
PAGES = (CLUSTER_FILE, RECEIPTS)


def updated(page: Page, text: str) -> str:
    """`text` (the page as it is) with its generated block written anew."""
    head, rest = text.split(page.start, 1)
    _, tail = rest.split(page.end, 1)
    return f"{head}{page.start}\n{page.render()}\n{page.end}{tail}"


def main() -> int:
    for page in PAGES:
        text = page.path.read_text(encoding="utf-8")
        new = updated(page, text)
        if new != text:
            page.path.write_text(new, encoding="utf-8")
            print(f"updated {page.path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
