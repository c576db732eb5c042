"""The bundled prefill corpus: real text that agent prompts resemble, code and prose by turns.

`agent_text.txt` (package data, about 160 KB) is eight of sparkrig's own files — its README, two
docs pages, four source modules and a test — copied unchanged by scripts/prefill_corpus.py, each
framed as a coding agent shows a file it read. It is licence-clear because every line is this
project's own work under its own licence (Apache-2.0); bench/corpus/NOTICE.md lists the files and
the commit they came from. The text is a frozen snapshot: a prefill rate is a rate on its text,
so receipts name the corpus by its sha256.
"""

from __future__ import annotations

import hashlib
from functools import cache
from importlib import resources

CORPUS_FILE = "agent_text.txt"
CORPUS_SOURCE = (
    "sparkrig's own README, docs and source (8 files, code and prose by turns; "
    "bench/corpus/NOTICE.md)"
)


@cache
def corpus_text() -> str:
    """The corpus, read once from the installed package."""
    return resources.files(__name__).joinpath(CORPUS_FILE).read_text(encoding="utf-8")


@cache
def corpus_sha256() -> str:
    return hashlib.sha256(corpus_text().encode()).hexdigest()
