"""Every relative link of the README and the docs resolves: the file exists, and an `#anchor`
names a heading of that page (GitHub's rule) or an explicit `id`."""

from __future__ import annotations

import re
from pathlib import Path

from tests.docs.doc_commands import ROOT, doc_pages
from tests.markdown_anchors import anchors

_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)|<img [^>]*src=\"([^\"]+)\"")
_FENCE = re.compile(r"^\s*```")


def broken_links(page: Path, root: Path = ROOT) -> list[str]:
    wrong = []
    fenced = False
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1):
        if _FENCE.match(line):
            fenced = not fenced
        if fenced:
            continue
        for match in _LINK.finditer(re.sub(r"`[^`]*`", "", line)):
            target = match.group(1) or match.group(2)
            if re.match(r"^[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            resolved = (page.parent / path).resolve() if path else page
            where = f"{page.relative_to(root)}:{number}"
            if not resolved.exists():
                wrong.append(f"{where}: {target} does not exist")
            elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
                wrong.append(f"{where}: {target} names no heading of {resolved.name}")
    return wrong


def test_every_relative_link_resolves() -> None:
    wrong = [problem for page in doc_pages() for problem in broken_links(page)]
    assert not wrong, "\n".join(wrong)


def test_a_broken_link_and_a_missing_anchor_are_caught(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("## Two words `here`\n\n[a](page.md#two-words-here) [b](gone.md) [c](#nope)\n")
    assert [line.split(": ", 1)[1] for line in broken_links(page, tmp_path)] == [
        "gone.md does not exist",
        "#nope names no heading of page.md",
    ]
