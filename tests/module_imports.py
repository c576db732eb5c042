"""What a module's source imports and which file calls it makes, read with `ast` (never imported),
for the tests that hold packages to their layer."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).parents[1] / "src" / "sparkrig"

FILE_CALLS = frozenset(
    {"open", "write_text", "write_bytes", "read_text", "read_bytes", "mkdir", "unlink"}
)


def imported_modules(source: str, *, skip_type_only: bool = False) -> set[str]:
    """Every module named by an import statement, at any depth (lazy imports count too);
    with `skip_type_only`, leave out those under `if TYPE_CHECKING:`."""
    names: set[str] = set()
    todo: list[ast.AST] = [ast.parse(source)]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            names.add(node.module)
        if skip_type_only and isinstance(node, ast.If) and _is_type_checking(node.test):
            todo.extend(node.orelse)
            continue
        todo.extend(ast.iter_child_nodes(node))
    return names


def runtime_imports(source: str) -> set[str]:
    """The imports a module runs: those under `if TYPE_CHECKING:` are left out."""
    return imported_modules(source, skip_type_only=True)


def _is_type_checking(test: ast.expr) -> bool:
    return ast.unparse(test) in {"TYPE_CHECKING", "typing.TYPE_CHECKING"}


def file_calls(source: str) -> set[str]:
    """Calls that read or write files: `open(...)`, `path.write_text(...)` and the like."""
    calls: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if name in FILE_CALLS:
                calls.add(name)
    return calls


def forbidden(imports: set[str], prefixes: tuple[str, ...]) -> set[str]:
    """The imports that are, or sit under, one of `prefixes`."""
    return {name for name in imports for p in prefixes if name == p or name.startswith(p + ".")}


def package_sources(package: str) -> dict[str, str]:
    """`{path relative to src/sparkrig: source}` for every module of a package."""
    root = SRC / package
    return {str(path.relative_to(SRC)): path.read_text() for path in sorted(root.rglob("*.py"))}
