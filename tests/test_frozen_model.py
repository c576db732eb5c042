"""`FrozenModel` (src/sparkrig/frozen_model.py) is the one place the strict, frozen pydantic
config is written: a class that inlines `ConfigDict(frozen=True, extra="forbid")` again fails
here, so the copies cannot creep back one module at a time.

Only that exact config is refused: `frozen=True` alone (results read from outside, which may
carry keys sparkrig ignores) and `extra="forbid"` alone (a settings file edited in place) are
other choices, and stay where they are.
"""

from __future__ import annotations

import ast
from pathlib import Path

from sparkrig.frozen_model import FrozenModel

SRC = Path(__file__).resolve().parents[1] / "src" / "sparkrig"
BASE = SRC / "frozen_model.py"
FROZEN_FORBID = {"frozen": True, "extra": "forbid"}


def inlined_bases(path: Path) -> list[str]:
    """`FILE:LINE CLASS` for each class in one file that assigns `model_config` the very
    config FrozenModel has."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        for statement in node.body:
            value = _model_config_value(statement)
            if value is None or not isinstance(value, ast.Call):
                continue
            if not (isinstance(value.func, ast.Name) and value.func.id == "ConfigDict"):
                continue
            try:
                keywords = {k.arg: ast.literal_eval(k.value) for k in value.keywords}
            except ValueError:
                continue
            if keywords == FROZEN_FORBID and not value.args:
                found.append(f"{path.name}:{statement.lineno} {node.name}")
    return found


def _model_config_value(statement: ast.stmt) -> ast.expr | None:
    if isinstance(statement, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id == "model_config" for t in statement.targets
    ):
        return statement.value
    if (
        isinstance(statement, ast.AnnAssign)
        and isinstance(statement.target, ast.Name)
        and statement.target.id == "model_config"
    ):
        return statement.value
    return None


def test_no_module_inlines_the_frozen_model_config() -> None:
    copies = [
        f"{path.relative_to(SRC).parent}/{where}"
        for path in sorted(SRC.rglob("*.py"))
        if path != BASE
        for where in inlined_bases(path)
    ]
    assert copies == [], (
        "these classes inline FrozenModel's config — subclass sparkrig.frozen_model.FrozenModel "
        f"instead: {', '.join(copies)}"
    )


def test_the_check_finds_a_planted_copy_and_only_that_one(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text(
        "from pydantic import BaseModel, ConfigDict\n"
        "class Copy(BaseModel):\n"
        '    model_config = ConfigDict(extra="forbid", frozen=True)\n'
        "class Frozen(BaseModel):\n"
        "    model_config = ConfigDict(frozen=True)\n"
        "class Strict(BaseModel):\n"
        '    model_config = ConfigDict(extra="forbid")\n'
    )
    assert inlined_bases(planted) == ["planted.py:3 Copy"]
    assert [where.split()[-1] for where in inlined_bases(BASE)] == ["FrozenModel"]


def test_the_base_is_the_config_the_check_looks_for() -> None:
    config = FrozenModel.model_config
    assert {key: config.get(key) for key in FROZEN_FORBID} == FROZEN_FORBID
