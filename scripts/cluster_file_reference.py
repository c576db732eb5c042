"""Write the table of every cluster-file key into docs/cluster-file.md, from the models' own
field descriptions and defaults (src/sparkrig/config/), so the reference cannot drift from what
sparkrig reads. `make docs` runs it; tests/docs/test_cluster_file_doc.py fails when it is stale."""

from __future__ import annotations

import sys
import types
import typing
from pathlib import Path

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from sparkrig.config.cluster import Cable, Cluster

DOC = Path(__file__).resolve().parents[1] / "docs" / "cluster-file.md"
START, END = "<!-- cluster-keys:start -->", "<!-- cluster-keys:end -->"
LEAVES = (Cable,)  # written as strings in the file


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


def _default(field: typing.Any) -> str:
    if field.default is PydanticUndefined:
        return "required" if field.default_factory is None else "—"
    if field.default is None:
        return "—"
    value = field.default
    if isinstance(value, bool):
        return "true" if value else "false"
    return f"`{value}`"


def rows(model: type[BaseModel] = Cluster, prefix: str = "") -> list[tuple[str, str, str]]:
    found = []
    done: set[type[BaseModel]] = set()
    for name, field in model.model_fields.items():
        key = f"{prefix}{field.alias or name}"
        description = (field.description or "").replace("|", "\\|").replace("\n", " ")
        found.append((key, _default(field), description))
        if key == "profiles":  # the keys of [profile] again, under a name
            found[-1] = (
                key,
                "—",
                f"{description}: each `[profiles.NAME]` takes `[profile]`'s keys",
            )
            continue
        for sub, shape in _models(field.annotation):
            if sub not in done:
                done.add(sub)
                found.extend(rows(sub, f"{key}{shape}."))
    return found


def render() -> str:
    lines = ["| key | default | what it sets |", "|---|---|---|"]
    lines += [f"| `{key}` | {default} | {what} |" for key, default, what in rows()]
    return "\n".join(lines)


def updated(text: str) -> str:
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{START}\n{render()}\n{END}{tail}"


def main() -> int:
    text = DOC.read_text(encoding="utf-8")
    new = updated(text)
    if new != text:
        DOC.write_text(new, encoding="utf-8")
        print(f"updated {DOC.relative_to(DOC.parents[1])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
