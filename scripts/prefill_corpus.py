"""Write the bench's prefill corpus, src/sparkrig/bench/corpus/agent_text.txt, from sparkrig's
own files: prose (README, docs) and code (source, a test) interleaved, each file framed the way a
coding agent shows a file it read, so the text looks like an agent's prompt.

The corpus is a frozen snapshot: a prefill rate is a rate on its text, so the text must not
change when the code does; rerun this only to replace the snapshot on purpose (receipts record
the corpus's sha256, so figures on two snapshots are not mistaken for one). Only files of this
repository are read, which is what makes the corpus licence-clear (bench/corpus/NOTICE.md).

Run: .venv/bin/python scripts/prefill_corpus.py
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "sparkrig" / "bench" / "corpus" / "agent_text.txt"
# prose and code by turns, about 160 KB in all (the package data stays small)
FILES = (
    "README.md",
    "src/sparkrig/client/endpoint.py",
    "docs/guards.md",
    "src/sparkrig/bench/statistics.py",
    "docs/fabric.md",
    "src/sparkrig/detectors/text.py",
    "tests/bench/test_statistics.py",
    "src/sparkrig/launch/lifecycle.py",
)
LANGUAGES = {".py": "python", ".md": "markdown"}


def framed(relative: str) -> str:
    """One file as an agent's tool result shows it: its path, then its text fenced."""
    path = ROOT / relative
    text = path.read_text(encoding="utf-8").rstrip("\n")
    fence = "````" if "```" in text else "```"
    return f"File: {relative}\n{fence}{LANGUAGES[path.suffix]}\n{text}\n{fence}\n"


def main() -> None:
    corpus = "\n".join(framed(relative) for relative in FILES)
    OUT.write_text(corpus, encoding="utf-8")
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    digest = hashlib.sha256(corpus.encode()).hexdigest()
    print(f"{OUT.relative_to(ROOT)}: {len(corpus.encode())} bytes, sha256 {digest}")
    print(f"from commit {commit}: {', '.join(FILES)}")


if __name__ == "__main__":
    main()
