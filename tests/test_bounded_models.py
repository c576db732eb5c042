"""Numbers that pydantic models take from outside are bounded (docs/errors.md, class 9).

tests/test_outside_numbers_only.py sees `int(`/`float(` calls; it cannot see the numbers tomllib,
json and pydantic make (pydantic's `ge=0` lets infinity and 10**400 by). This test walks the
models those readers feed:

- TOML settings, `Cluster` (and every model under it) and `ServeConfig`: every int and float
  field declares its own range (ge/gt/le/lt), or is in ALLOWED with the reason. Before the model
  reads a file, `config/toml_numbers.py` holds each number to that range, finite and within
  ±2**1023 (a one-sided range is then bounded on both sides).
- JSON records read back, the five receipt kinds through `json_files.read_receipt` and the launch
  state, fabric journal, check baseline, engine record and telemetry record through
  `read_model_file`: every number is refused when NaN, infinite or past ±2**1023
  (`outside_numbers.check_every_number`) before the model reads it. The test plants `1e400` and
  10**400 in each receipt kind's real old file, and checks that no other reader of a record
  exists (`model_validate_json` nowhere in src; `read_model_file`'s models are the ones listed).

What this does not cover: the range of each receipt field. Most receipt numbers (measured
rates, percentiles, deltas; 152 of the 172 number fields when this was written) carry no range
of their own, so a hand-edited receipt with a negative count still loads; it can no longer hold
a number that overflows or is not finite. Nor the other records' field ranges (a launch state's
pid), only their finiteness. Server JSON has no pydantic model: replies are read field by
field through `count_or_none`/`number_or_none` (tests/hostile/test_servers.py). The soak
workload log (`wire/workload_log.py`) is left to the change that bounds it.
"""

from __future__ import annotations

import ast
import json
import types
import typing
from pathlib import Path
from typing import Annotated, Any

import annotated_types
import pytest
from pydantic import BaseModel, Field
from pydantic.fields import FieldInfo

from sparkrig.config.cluster import Cluster
from sparkrig.errors import UsageError
from sparkrig.gateway.serve_config import ServeConfig
from sparkrig.receipts import load_receipt_file
from sparkrig.report.receipt_kinds import RECEIPT_MODELS

SRC = Path(__file__).resolve().parents[1] / "src" / "sparkrig"
OLD_RECEIPTS = Path(__file__).parent / "fixtures" / "receipts"

# "Model.field": why it may have no range of its own
ALLOWED: dict[str, str] = {
    "FabricSettings.mtu": "its validator _mtu_in_range holds it to the fabric's MTU range",
    "ServingProfile.generation_overrides": "free-form sampling values passed to the engine, "
    "which judges each; the TOML check still refuses NaN, infinity and 10**400",
}

# the models read through json_files.read_model_file (found in src below), each a JSON record
READ_MODEL_FILE_MODELS = {"LaunchState", "FabricJournal", "Baseline", "EngineInstall"} | {
    "VllmCpuInstall",
    "TelemetryRecord",
    "ActivityNote",  # bench/idle_gap.py: a damaged note reads as no note
}

Members = list[tuple[Any, tuple[Any, ...]]]


def _members(annotation: Any, meta: tuple[Any, ...] = ()) -> Members:
    if typing.get_origin(annotation) is Annotated:
        bare, *more = typing.get_args(annotation)
        return _members(bare, (*meta, *more))
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return [m for arg in typing.get_args(annotation) for m in _members(arg, meta)]
    return [(annotation, meta)]


def _has_range(meta: tuple[Any, ...]) -> bool:
    bounds = (annotated_types.Ge, annotated_types.Gt, annotated_types.Le, annotated_types.Lt)
    return any(
        isinstance(item, bounds)
        or (isinstance(item, FieldInfo) and _has_range(tuple(item.metadata)))
        for item in meta
    )


def number_fields(root: type[BaseModel]) -> list[tuple[str, bool]]:
    """("Model.field", has a range of its own) for every int and float a file can set under
    `root`, through nested models, unions, lists, tuples and dict values."""
    found: list[tuple[str, bool]] = []
    seen: set[type[BaseModel]] = set()

    def visit(annotation: Any, meta: tuple[Any, ...], name: str) -> None:
        for bare, inner in _members(annotation, meta):
            if isinstance(bare, type) and issubclass(bare, BaseModel):
                walk(bare)
            elif typing.get_origin(bare) in (list, set, frozenset, tuple, dict):
                for arg in typing.get_args(bare):
                    if arg is not Ellipsis:
                        visit(arg, (), name)
            elif bare in (int, float):
                found.append((name, _has_range(inner)))

    def walk(model: type[BaseModel]) -> None:
        if model in seen:
            return
        seen.add(model)
        for field_name, field in model.model_fields.items():
            visit(field.annotation, tuple(field.metadata), f"{model.__name__}.{field_name}")

    walk(root)
    return found


def unbounded(roots: list[type[BaseModel]]) -> list[str]:
    return sorted({name for root in roots for name, ranged in number_fields(root) if not ranged})


def test_every_number_of_a_toml_settings_file_has_its_own_range() -> None:
    missing = [name for name in unbounded([Cluster, ServeConfig]) if name not in ALLOWED]
    assert missing == [], (
        f"TOML setting(s) with no range of their own: {missing} — give each a ge/gt/le/lt "
        "(config/toml_numbers.py holds the file's value to it), or add it to ALLOWED with why"
    )
    stale = set(ALLOWED) - set(unbounded([Cluster, ServeConfig]))
    assert not stale, f"ALLOWED entries that now have a range or are gone: {stale}"


class _Planted(BaseModel):
    """A settings model as someone might add one: a count with no range, in a list of tables."""

    class Table(BaseModel):
        count: int = Field(default=0, description="how many")
        share: float = Field(default=0.5, ge=0, le=1, description="a share")

    tables: list[Table] = Field(default_factory=list)
    limit: int | None = Field(default=None, description="no range either")


def test_the_walk_finds_a_number_with_no_range_wherever_it_sits() -> None:
    assert unbounded([_Planted]) == ["Table.count", "_Planted.limit"]


@pytest.mark.parametrize("planted", ["1e400", "-1e400", "NaN", "Infinity", str(10**400)])
@pytest.mark.parametrize("model", list(RECEIPT_MODELS.values()), ids=list(RECEIPT_MODELS))
def test_a_receipt_of_every_kind_with_a_number_that_is_not_one_is_damaged(
    model: type[Any], planted: str, tmp_path: Path
) -> None:
    """The kind's real old file, its last number replaced: refused in one line naming where."""
    name = f"{model.kind_name().removeprefix('sparkrig-')}-v1.json"
    raw = json.loads((OLD_RECEIPTS / name).read_text())
    where = _plant(raw)
    path = tmp_path / name
    path.write_text(json.dumps(raw).replace('"__planted__"', planted))

    with pytest.raises(UsageError) as caught:
        load_receipt_file(path, model)

    message = str(caught.value)
    assert f"receipt {path} is damaged: {where} is " in message, message
    assert "\n" not in message
    assert message.count(" — ") == 1


def _plant(raw: Any) -> str:
    """Replace the last number under `raw` (not the header's schema_version) with a marker;
    return its path as the message writes it."""
    found: list[tuple[str, Any, Any]] = []
    stack: list[tuple[str, Any]] = [("", raw)]
    while stack:
        path, item = stack.pop()
        children = (
            item.items()
            if isinstance(item, dict)
            else enumerate(item)
            if isinstance(item, list)
            else []
        )
        for key, value in children:
            inner = f"{path}[{key}]" if isinstance(key, int) else (f"{path}.{key}" if path else key)
            if isinstance(value, int | float) and not isinstance(value, bool):
                if inner != "schema_version":
                    found.append((inner, item, key))
            else:
                stack.append((inner, value))
    assert found, "a receipt fixture with no number to plant"
    where, holder, key = max(found, key=lambda f: len(f[0]))
    holder[key] = "__planted__"
    return where


def test_every_record_read_back_goes_through_a_reader_that_checks_its_numbers() -> None:
    """No module reads a record's JSON text into a model itself, and `read_model_file` reads the
    records this test names; the receipts go through `read_receipt` (test above)."""
    direct, through = [], set()
    for path in SRC.rglob("*.py"):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            called = (
                node.func.attr
                if isinstance(node.func, ast.Attribute)
                else getattr(node.func, "id", "")
            )
            if called == "model_validate_json":
                direct.append(f"{path.relative_to(SRC)}:{node.lineno}")
            if called == "read_model_file" and len(node.args) >= 2:
                model = node.args[1]
                through.add(model.id if isinstance(model, ast.Name) else ast.unparse(model))
    assert direct == [], f"JSON read into a model outside json_files: {direct}"
    assert through == READ_MODEL_FILE_MODELS


def test_read_model_file_refuses_a_number_that_is_not_one(tmp_path: Path) -> None:
    from sparkrig.doctor.telemetry_model import TelemetryRecord
    from sparkrig.json_files import read_model_file

    host = {"host": "h", "interval_s": 1.0, "started_at": 0.0, "samples": [], "gpu_source": "x"}
    host |= {"sampler_cpu_s": 0.0, "sampler_wall_s": "__planted__"}
    path = tmp_path / "r.telemetry.json"
    path.write_text(json.dumps({"hosts": [host]}).replace('"__planted__"', "1e400"))

    with pytest.raises(UsageError, match=r"is damaged: hosts\[0\]\.sampler_wall_s is 'inf'"):
        read_model_file(path, TelemetryRecord, what="telemetry record", fix="move it aside")
    path.write_text(json.dumps({"hosts": [host | {"sampler_wall_s": 2.5}]}))
    assert read_model_file(path, TelemetryRecord, what="t", fix="f").hosts[0].sampler_wall_s == 2.5
