"""No module imports a higher stage, and report/ does no I/O (docs/architecture.md, "Stages").

Every `import` in src/sparkrig (at the top, inside a function, under TYPE_CHECKING alike) is read
with `ast`; each `sparkrig.X` it names is mapped to X's stage. A module may import its own
package and the stages below its own; two packages of one stage never import each other. The
tree has no violation today (KNOWN_VIOLATIONS is empty); the test fails on any violation not
listed, and on a listed one that is gone, so the list can only shrink.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "sparkrig"

# The one declaration of the stage order, lowest first; docs/architecture.md quotes it. A name
# is a top-level package or module of src/sparkrig ("sparkrig" is the package's __init__).
STAGES: list[set[str]] = [
    {"sparkrig", "errors", "defaults", "process_exit", "frozen_model", "secret_names"},
    {"paths", "local_process", "registry", "outside_numbers"},
    {"json_files"},
    {"wire", "detectors", "receipts"},
    {"config"},
    {"fabric", "recipes"},
    {"engines"},
    {"launch", "lint"},
    {"client", "gateway"},
    {"guards", "bench", "doctor"},
    {"report"},
    {"cli"},
    {"__main__"},
]

# Rules stated on their own as well (the stage order implies the first two; they stay when the
# order is redrawn): (importer package, imported package).
FORBIDDEN: set[tuple[str, str]] = {
    ("gateway", "guards"),
    ("gateway", "bench"),
    ("client", "guards"),
    ("client", "bench"),
    ("client", "gateway"),
}

# report/ renders; it never builds, starts, fetches or connects.
REPORT_IO = (
    "aiohttp",
    "socket",
    "subprocess",
    "asyncio.subprocess",
    "urllib.request",
    "http.client",
    "httpx",
    "requests",
    "sparkrig.launch",
    "sparkrig.client",
    "sparkrig.engines.llamacpp.build",
    "sparkrig.engines.llamacpp.source_build",
    "sparkrig.engines.llamacpp.self_test",
)
ASYNCIO_SUBPROCESS = ("create_subprocess_exec", "create_subprocess_shell")
ASYNCIO_SUBPROCESS_NAMES = {f"asyncio.{name}" for name in ASYNCIO_SUBPROCESS}

Violation = tuple[str, str]  # (importing module, imported module or attribute)

# Violations of today's tree, to be removed as the code moves (never added to).
KNOWN_VIOLATIONS: set[Violation] = set()


def stage_of(name: str, stages: list[set[str]]) -> int:
    for level, names in enumerate(stages):
        if name in names:
            return level
    raise AssertionError(
        f"{name!r} is in no stage — add it to STAGES in tests/test_layers.py and to the stage "
        "list in docs/architecture.md"
    )


def module_name(path: Path, root: Path) -> str:
    parts = [root.name, *path.relative_to(root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_names(tree: ast.Module, root: Path, package: str = "sparkrig") -> set[str]:
    """Every module an import names (`from sparkrig.a import b` names `sparkrig.a.b` when b is a
    module of the tree, else `sparkrig.a`), plus `asyncio.create_subprocess_*` used. A relative
    import is resolved from `package`, the package the module sits in."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, package)
            for alias in node.names:
                inner = f"{base}.{alias.name}"
                keep = _is_module(inner, root) or inner in ASYNCIO_SUBPROCESS_NAMES
                names.add(inner if keep else base)
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "asyncio"
            and node.attr in ASYNCIO_SUBPROCESS
        ):
            names.add(f"asyncio.{node.attr}")
    return names


def _absolute(node: ast.ImportFrom, package: str) -> str:
    """`from ..a import b` inside `sparkrig.x.y` -> `sparkrig.a`; an absolute import as it is."""
    if node.level == 0:
        return node.module or ""
    parts = package.split(".")[: len(package.split(".")) - (node.level - 1)]
    return ".".join([*parts, node.module] if node.module else parts)


def _package(module: str) -> str:
    """`sparkrig.client.endpoint` -> `client`; `sparkrig` (its __init__) -> `sparkrig`."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def _is_module(name: str, root: Path) -> bool:
    """`sparkrig.a.b` names a module or package of the tree (not a class or function in one)."""
    if not name.startswith(f"{root.name}."):
        return False
    path = root.joinpath(*name.split(".")[1:])
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _is_report_io(name: str) -> bool:
    return name in ASYNCIO_SUBPROCESS_NAMES or any(
        name == io or name.startswith(f"{io}.") for io in REPORT_IO
    )


def layer_violations(root: Path, stages: list[set[str]]) -> set[Violation]:
    """(module, what it imports) for every import that breaks a rule of this file."""
    found: set[Violation] = set()
    for path in sorted(root.rglob("*.py")):
        module = module_name(path, root)
        own = _package(module)
        own_stage = stage_of(own, stages)
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        names = imported_names(ast.parse(path.read_text(), str(path)), root, package)
        for name in names:
            if not name.startswith("sparkrig."):
                continue  # another library, or `from sparkrig import __version__`
            target = _package(name)
            if target == own:
                continue
            if stage_of(target, stages) >= own_stage or (own, target) in FORBIDDEN:
                found.add((module, name))
        if own == "report":
            found |= {(module, name) for name in names if _is_report_io(name)}
    return found


def test_no_module_imports_a_higher_stage_and_report_does_no_io() -> None:
    found = layer_violations(SRC, STAGES)
    new = sorted(found - KNOWN_VIOLATIONS)
    gone = sorted(KNOWN_VIOLATIONS - found)
    assert not new, "imports that break the stage order or report/'s no-I/O rule:\n" + "\n".join(
        f"  {module} imports {name}" for module, name in new
    )
    assert not gone, (
        "these KNOWN_VIOLATIONS are fixed — remove them from tests/test_layers.py:\n"
        + "\n".join(f"  {module} imports {name}" for module, name in gone)
    )


def test_the_docs_quote_the_stage_order() -> None:
    text = (SRC.parents[1] / "docs" / "architecture.md").read_text()
    block = text.split("## Stages", 1)[1].split("```", 2)[1]
    quoted = [
        {name.strip().removesuffix(" (__init__)") for name in line.split(",")}
        for line in block.strip().splitlines()
    ]
    assert quoted == STAGES, "docs/architecture.md's stage list differs from STAGES here"


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "sparkrig"
    for name, text in {"__init__.py": "", **files}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_the_checker_finds_a_planted_upward_import(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "errors.py": "",
            "wire/__init__.py": "",
            "wire/sse.py": "from sparkrig import errors\n",
            "client/__init__.py": "",
            "client/endpoint.py": "from sparkrig.wire.sse import SseReader\n",
            "guards/__init__.py": "",
            "guards/battery.py": "def f():\n    from sparkrig.client import endpoint\n",
            "guards/detectors.py": "",
            "report/__init__.py": "",
            "report/table.py": "from sparkrig.guards.detectors import X\n",
            "cli/__init__.py": "",
            "cli/main.py": "import sparkrig.report.table\nfrom sparkrig import __version__\n",
            "cli/relative.py": "from ..report import table\nfrom . import main\n",
        },
    )
    assert layer_violations(root, STAGES) == set()  # every import points down: clean
    (root / "wire" / "sse.py").write_text("from sparkrig.client.endpoint import EndpointClient\n")
    (root / "guards" / "detectors.py").write_text("import sparkrig.cli.main\n")
    (root / "client" / "endpoint.py").write_text("from ..guards import detectors\n")
    assert layer_violations(root, STAGES) == {
        ("sparkrig.wire.sse", "sparkrig.client.endpoint"),
        ("sparkrig.guards.detectors", "sparkrig.cli.main"),
        ("sparkrig.client.endpoint", "sparkrig.guards.detectors"),
    }


def test_the_checker_finds_siblings_the_gateway_rules_and_report_io(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "bench/__init__.py": "",
            "bench/run.py": "from sparkrig.guards import detectors\n",
            "guards/__init__.py": "",
            "guards/detectors.py": "",
            "gateway/__init__.py": "",
            "gateway/live.py": "from sparkrig.bench.run import x\n",
            "report/__init__.py": "",
            "report/a.py": "import aiohttp\n",
            "report/b.py": "import asyncio\nasyncio.create_subprocess_exec('make')\n",
            "report/c.py": "from subprocess import run\n",
            "report/d.py": "from asyncio import create_subprocess_shell\n",
        },
    )
    assert layer_violations(root, STAGES) == {
        ("sparkrig.bench.run", "sparkrig.guards.detectors"),
        ("sparkrig.gateway.live", "sparkrig.bench.run"),
        ("sparkrig.report.a", "aiohttp"),
        ("sparkrig.report.b", "asyncio.create_subprocess_exec"),
        ("sparkrig.report.c", "subprocess"),
        ("sparkrig.report.d", "asyncio.create_subprocess_shell"),
    }


def test_a_package_in_no_stage_is_named(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"newstage/__init__.py": "from sparkrig import errors\n"})
    with pytest.raises(AssertionError, match="'newstage' is in no stage"):
        layer_violations(root, STAGES)
