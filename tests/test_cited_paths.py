"""A repo path cited in a source comment or docstring names a file that exists.

Comments and docstrings of every Python file in src/, tests/, benchmarks/ and scripts/ are read
(`tokenize` for comments, `ast` for docstrings). What is a citation of this repo:
- a path whose first folder is a top folder of the repo (`docs/errors.md`, `tests/fixtures/`,
  `research/...`) or a package of src/sparkrig (`cli/one_line.py`): it must exist at the root,
  under src/sparkrig/ or beside the citing file;
- a bare `name.py` or `name.md` (`cli.py`): some file of the repo must have that name;
- `file.md#anchor`: the file must have a heading of that GitHub anchor, or an `id="anchor"`.
Not citations, so not read: a URL, an absolute path (a host's /sys/class/net), another
project's path (`vllm/v1/...`), a placeholder in capitals (`CLUSTER.toml`, `OUT_DIR/x.json`),
a bare data file name (`bench.json`), and the names in NOT_REPO with why.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from functools import cache
from pathlib import Path

from tests.markdown_anchors import anchors

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("src", "tests", "benchmarks", "scripts")
TOPS = ("src", "tests", "docs", "benchmarks", "examples", "scripts", "research")
PACKAGES = tuple(p.name for p in (ROOT / "src" / "sparkrig").iterdir() if p.is_dir())
# this file and the field-notes test quote made-up citations as examples
SKIPPED = (Path(__file__).resolve(), ROOT / "tests" / "test_field_notes.py")
CITED = re.compile(r"(?<![\w./:-])((?:[\w-]+/)*[\w.-]*\.(?:py|md)(?:#[a-z0-9-]+)?|[\w-]+/[\w./-]*)")
PLACEHOLDER = re.compile(r"\b[A-Z][A-Z0-9_]*[A-Z0-9]\b|\.\.\.")
# bare names that look like this repo's files but are another project's, with why
NOT_REPO = {
    "NETWORKING.md": "eugr/spark-vllm-docker's networking guide, cited as eugr's",
}


def texts(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every comment and docstring in one Python file."""
    source = path.read_text()
    found = [
        (tok.start[0], tok.string)
        for tok in tokenize.generate_tokens(io.StringIO(source).readline)
        if tok.type == tokenize.COMMENT
    ]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                found.append((node.body[0].lineno, doc))
    return found


@cache
def names_in_repo() -> frozenset[str]:
    return frozenset(
        p.name
        for top in (*TOPS, ".github")
        if (ROOT / top).exists()
        for p in (ROOT / top).rglob("*")
    ) | frozenset(p.name for p in ROOT.iterdir())


def problem(cited: str, citing: Path) -> str | None:
    """Why `cited` (as written in `citing`) names nothing in the repo; None when it does or when
    it is no citation of this repo."""
    path, _, anchor = cited.rstrip(".,;:)").partition("#")
    first = path.split("/")[0]
    if path in NOT_REPO or PLACEHOLDER.search(path):
        return None
    if "/" not in path:
        if not path.endswith((".py", ".md")) or path in names_in_repo():
            return None
        return f"no file of the repo is named {path}"
    if first not in TOPS and first not in PACKAGES:
        return None  # another project's path
    bases = (ROOT, ROOT / "src" / "sparkrig", citing.parent)
    target = next((base / path for base in bases if (base / path).exists()), None)
    if target is None:
        return f"{path} does not exist"
    if anchor and target.suffix == ".md" and anchor not in anchors(target):
        return f"{path} has no heading #{anchor}"
    return None


def citations(path: Path) -> list[tuple[int, str]]:
    return [(line, m.group(1)) for line, text in texts(path) for m in CITED.finditer(text)]


def test_every_path_cited_in_a_comment_or_docstring_exists() -> None:
    bad = []
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*.py")):
            if path in SKIPPED:
                continue
            for line, cited in citations(path):
                why = problem(cited, path)
                if why is not None:
                    bad.append(f"{path.relative_to(ROOT)}:{line}: {cited}: {why}")
    assert not bad, "comments citing what the repo does not have:\n" + "\n".join(bad)


def test_the_check_fails_on_a_missing_path_and_a_wrong_anchor(tmp_path: Path) -> None:
    citing = tmp_path / "mod.py"
    citing.write_text(
        '"""See research/notes.md, docs/architecture.md#receipts and cli/one_line.py."""\n'
        "# the old cli.py did this; docs/architecture.md#no-such-heading says so\n"
        "# not ours: vllm/v1/engine.py, CLUSTER.toml, OUT_DIR/x.json, bench.json, /sys/class\n"
    )
    found = {cited: problem(cited, citing) for _, cited in citations(citing)}
    assert {cited: why for cited, why in found.items() if why is not None} == {
        "research/notes.md": "research/notes.md does not exist",
        "cli.py": "no file of the repo is named cli.py",
        "docs/architecture.md#no-such-heading": "docs/architecture.md has no heading "
        "#no-such-heading",
    }
    assert found["docs/architecture.md#receipts"] is None
    assert found["cli/one_line.py"] is None
    assert found["vllm/v1/engine.py"] is None
