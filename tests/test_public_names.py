"""A name another module imports is public: no `from sparkrig.x import _private` across modules,
and no two modules of src/sparkrig import each other (at the top, inside a function or under
TYPE_CHECKING alike).

Every import in src/sparkrig is read with `ast`. KNOWN lists today's exceptions, each with its
reason; the test fails on any new one and on a listed one that is gone, so the list only shrinks.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

# (importing module, imported module, name) -> why it is still private
KNOWN: dict[tuple[str, str, str], str] = {}


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def private_imports(source: str, importer: str) -> set[tuple[str, str, str]]:
    """(importer, module, name) for each `from sparkrig... import _name` of another module."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sparkrig"):
            module = node.module or ""
            for alias in node.names:
                private = alias.name.startswith("_") and not alias.name.startswith("__")
                if private and module != importer:
                    found.add((importer, module, alias.name))
    return found


def imported_modules(source: str) -> set[str]:
    """Every sparkrig module one file imports (a `from m import n` counts m, and m.n when that
    is a module)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("sparkrig")}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sparkrig"):
            found.add(node.module or "")
            found |= {f"{node.module}.{a.name}" for a in node.names}
    return found


def _tree() -> dict[str, str]:
    return {module_name(p): p.read_text() for p in sorted((SRC / "sparkrig").rglob("*.py"))}


def test_no_module_imports_another_modules_private_name() -> None:
    found = set().union(*(private_imports(text, name) for name, text in _tree().items()))
    new = sorted(found - set(KNOWN))
    gone = sorted(set(KNOWN) - found)
    assert not new, "make these public (drop the underscore) where they are defined:\n" + "\n".join(
        f"  {importer} imports {module}.{name}" for importer, module, name in new
    )
    assert not gone, "remove from KNOWN, now fixed: " + ", ".join(map(str, gone))


def test_the_check_fails_on_a_private_import() -> None:
    source = "from sparkrig.gateway.proxy import Gateway, _relay\nfrom sparkrig.x import __all__\n"
    assert private_imports(source, "sparkrig.gateway.serve") == {
        ("sparkrig.gateway.serve", "sparkrig.gateway.proxy", "_relay")
    }
    assert private_imports("from sparkrig.a import _own\n", "sparkrig.a") == set()


def circles(tree: dict[str, str]) -> set[tuple[str, str]]:
    """Pairs of modules that import each other."""
    imports = {name: imported_modules(text) & set(tree) for name, text in tree.items()}
    return {
        (a, b)
        for a, targets in imports.items()
        for b in targets
        if a < b and a in imports.get(b, set())
    }


def test_no_two_modules_import_each_other() -> None:
    found = circles(_tree())
    assert not found, "modules that import each other: " + ", ".join(
        f"{a} <-> {b}" for a, b in sorted(found)
    )


def test_the_circle_check_fails_on_a_circle() -> None:
    tree = {
        "sparkrig.gateway.serve": "from sparkrig.gateway.workload import workload_record\n",
        "sparkrig.gateway.workload": (
            "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from sparkrig.gateway.serve import Trace\n"
        ),
        "sparkrig.gateway.trace": "",
    }
    assert circles(tree) == {("sparkrig.gateway.serve", "sparkrig.gateway.workload")}
