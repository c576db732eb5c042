"""The anchors a markdown page offers, by GitHub's rule: each heading outside a code fence,
lowercased, its markup and punctuation dropped, spaces as hyphens, a repeated one numbered
(`-1`, `-2`); and every explicit `id="…"`. The link and citation checks both read pages so."""

from __future__ import annotations

import re
from pathlib import Path

_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*$")
_ID = re.compile(r"""\bid=["']([^"']+)["']""")
_FENCE = re.compile(r"^\s*```")


def slug(heading: str) -> str:
    text = re.sub(r"<[^>]*>|`|\*", "", heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found: set[str] = set()
    counts: dict[str, int] = {}
    fenced = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        found.update(_ID.findall(line))
        heading = _HEADING.match(line)
        if fenced or not heading:
            continue
        name = slug(heading.group(1))
        seen = counts.get(name, 0)
        counts[name] = seen + 1
        found.add(name if seen == 0 else f"{name}-{seen}")
    return found
