"""docs/architecture.md's package map lists every package and module under src/sparkrig, and
nothing else. The map is the fenced block after the `<!-- package-map -->` marker: one name per
line, two spaces of indent per level, a package ending in `/`, text after `  #` a comment.

After moving modules, print the tree's map with `python tests/test_architecture_map.py` and
paste it over the block (keeping the comments that still apply).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "sparkrig"
DOC = ROOT / "docs" / "architecture.md"
MARKER = "<!-- package-map -->"


def tree_entries(src: Path) -> set[str]:
    """`bench/`, `bench/point.py`, `defaults.py`…: every package (a folder holding Python) and
    every module but `__init__.py`, relative to src."""
    entries: set[str] = set()
    for path in src.rglob("*.py"):
        if "__pycache__" in path.parts:
            continue
        relative = path.relative_to(src)
        for depth in range(1, len(relative.parts)):
            entries.add("/".join(relative.parts[:depth]) + "/")
        if path.name != "__init__.py":
            entries.add(relative.as_posix())
    return entries


def render_map(src: Path) -> str:
    """The tree as the block's lines: packages before the modules beside them, each sorted."""
    entries = tree_entries(src)
    lines = [f"{src.name}/"]

    def walk(prefix: str, depth: int) -> None:
        children = sorted(
            (e for e in entries if e != prefix and e.startswith(prefix) and _child(e, prefix)),
            key=lambda e: (not e.endswith("/"), e),
        )
        for child in children:
            lines.append("  " * depth + child[len(prefix) :])
            if child.endswith("/"):
                walk(child, depth + 1)

    walk("", 1)
    return "\n".join(lines)


def _child(entry: str, prefix: str) -> bool:
    """`entry` sits right inside the package `prefix` (not deeper)."""
    return "/" not in entry[len(prefix) :].rstrip("/")


def map_block(doc_text: str) -> list[str]:
    """The fenced block's lines after the marker."""
    if MARKER not in doc_text:
        raise AssertionError(
            f"docs/architecture.md has no {MARKER} marker — put it above the package map block"
        )
    after = doc_text.split(MARKER, 1)[1].lstrip("\n")
    if not after.startswith("```"):
        raise AssertionError(f"no fenced block right after {MARKER} in docs/architecture.md")
    body = after.split("\n", 1)[1]
    if "\n```" not in "\n" + body:
        raise AssertionError("the package map's fenced block is never closed")
    return ("\n" + body).split("\n```", 1)[0].strip("\n").splitlines()


def doc_entries(lines: list[str]) -> set[str]:
    """The block's lines as tree entries; the first line is the root folder."""
    entries: set[str] = set()
    parents: list[str] = []
    for number, line in enumerate(lines[1:], start=2):
        name = line.split("  #", 1)[0].rstrip()
        if not name.strip():
            continue
        indent = len(name) - len(name.lstrip(" "))
        depth = indent // 2
        if indent % 2 or depth < 1 or depth > len(parents) + 1:
            raise AssertionError(f"package map line {number} {line!r}: indent it 2 spaces a level")
        parents = parents[: depth - 1]
        entry = "".join(parents) + name.strip()
        entries.add(entry)
        if entry.endswith("/"):
            parents.append(name.strip())
    return entries


def differences(documented: set[str], actual: set[str]) -> list[str]:
    missing = sorted(actual - documented)
    extra = sorted(documented - actual)
    return [f"  missing from the map: {e}" for e in missing] + [
        f"  in the map, not in src/sparkrig: {e}" for e in extra
    ]


def test_the_package_map_matches_the_tree() -> None:
    documented = doc_entries(map_block(DOC.read_text()))
    problems = differences(documented, tree_entries(SRC))
    assert not problems, (
        "docs/architecture.md's package map and src/sparkrig differ (print the tree's map with "
        "`python tests/test_architecture_map.py`):\n" + "\n".join(problems)
    )


def test_the_comparison_names_what_is_missing_and_extra(tmp_path: Path) -> None:
    src = tmp_path / "sparkrig"
    for name in ("__init__.py", "defaults.py", "wire/__init__.py", "wire/sse.py"):
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text("")
    doc = f"# x\n\n{MARKER}\n```text\n{render_map(src)}\n```\n"
    assert doc_entries(map_block(doc)) == tree_entries(src)  # the rendered map matches: clean
    (src / "wire" / "openai.py").write_text("")  # a module the map does not list
    (src / "wire" / "sse.py").unlink()  # and one it lists that is gone
    assert differences(doc_entries(map_block(doc)), tree_entries(src)) == [
        "  missing from the map: wire/openai.py",
        "  in the map, not in src/sparkrig: wire/sse.py",
    ]


def test_comments_and_nesting_are_read() -> None:
    lines = ["sparkrig/", "  client/  # the client", "    endpoint.py", "  defaults.py  # all"]
    assert doc_entries(lines) == {"client/", "client/endpoint.py", "defaults.py"}
    with pytest.raises(AssertionError, match="indent it 2 spaces"):
        doc_entries(["sparkrig/", "   odd.py"])


if __name__ == "__main__":
    sys.stdout.write(render_map(SRC) + "\n")
