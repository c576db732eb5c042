"""The typer floor in pyproject.toml provides every typer name sparkrig and its tests use, and
the private `typer._click` is imported only by its one shim (src/sparkrig/cli/click_exceptions.py).

tests/fixtures/typer/ holds the names that version provides, listed from the real package by
benchmarks/typer_floor.py. This test reads the floor, checks the list was made for it, and checks
every name used against it: a new `typer.Something` that the floor lacks fails here, before a
user with an older typer meets it, even where the floor's wheel cannot be fetched.
tests/cli/test_typer_floor_run.py runs the CLI under the floor itself.
"""

from __future__ import annotations

import ast
import functools
import re
import tomllib
from pathlib import Path

import typer

ROOT = Path(__file__).resolve().parents[2]
NAMES = ROOT / "tests" / "fixtures" / "typer" / "names.txt"
SHIM = ROOT / "src" / "sparkrig" / "cli" / "click_exceptions.py"

Name = tuple[str, str]  # (module, attribute); attribute "" for the module itself


def typer_floor() -> str:
    """The version in pyproject.toml's `typer>=X` requirement."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    found = [m.group(1) for d in project["dependencies"] if (m := re.match(r"typer>=(\S+)", d))]
    assert len(found) == 1, f"pyproject.toml names no single typer floor: {found}"
    return found[0]


def names_in(path: Path) -> set[Name]:
    """Every typer module and attribute one file imports or reads (`typer.Option`)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    used: set[Name] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            used |= {(a.name, "") for a in node.names if a.name.split(".")[0] == "typer"}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "typer":
            used |= {(node.module or "", a.name) for a in node.names}
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "typer"
        ):
            used.add(("typer", node.attr))
    return used


@functools.cache
def used_names() -> dict[Name, list[str]]:
    """Each typer name used in src/ and tests/, with the files that use it."""
    found: dict[Name, list[str]] = {}
    for folder in ("src", "tests", "benchmarks"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for name in names_in(path):
                found.setdefault(name, []).append(str(path.relative_to(ROOT)))
    return found


def listed() -> tuple[str, set[Name]]:
    """The version the committed list was made for, and the names it says that version has."""
    lines = NAMES.read_text().splitlines()
    version = next(line.split()[-1] for line in lines if line.startswith("# typer "))
    names = {
        (parts[0], parts[1] if len(parts) > 1 else "")
        for line in lines
        if line and not line.startswith("#")
        for parts in [line.split()]
    }
    return version, names


def test_the_names_list_is_of_the_floor_version() -> None:
    version, _ = listed()
    assert version == typer_floor(), (
        f"tests/fixtures/typer/names.txt lists typer {version}, pyproject.toml's floor is "
        f"{typer_floor()} — rerun `python benchmarks/typer_floor.py`"
    )


def test_the_floor_has_every_typer_name_sparkrig_uses() -> None:
    _, provided = listed()
    missing = {name: files for name, files in used_names().items() if name not in provided}
    assert not missing, f"typer {typer_floor()} lacks: " + "; ".join(
        f"{module}.{attr or '(module)'} (used in {', '.join(files)})"
        for (module, attr), files in sorted(missing.items())
    )


def test_the_check_fails_on_a_name_the_floor_lacks(tmp_path: Path) -> None:
    user = tmp_path / "user.py"
    user.write_text("import typer\nfrom typer.core import TyperGroup\ntyper.NotInTyper\n")
    _, provided = listed()
    assert names_in(user) - provided == {("typer", "NotInTyper")}


def test_only_the_shim_imports_typers_private_modules() -> None:
    private = {
        (module, attr, file)
        for (module, attr), files in used_names().items()
        if any(part.startswith("_") for part in module.split(".")[1:])
        for file in files
    }
    assert {file for _, _, file in private} == {str(SHIM.relative_to(ROOT))}, private


def test_the_installed_typer_is_at_least_the_floor() -> None:
    def parts(version: str) -> tuple[int, ...]:
        return tuple(int(p) for p in re.findall(r"\d+", version)[:3])

    assert parts(typer.__version__) >= parts(typer_floor())
