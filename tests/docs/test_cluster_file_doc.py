"""docs/cluster-file.md: its table of keys is what the models read (regenerated, compared), and
its annotated example is whole: with every commented key switched on it validates, and it holds
every key of that table."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from sparkrig.config.loading import parse_cluster
from tests.docs.model_reference import model_reference

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "cluster-file.md"
_COMMENTED_KEY = re.compile(r"^# (\[\[?[a-z_.]+\]\]?(\s+#.*)?|[a-z_]+ = .*)$")


def example(text: str) -> str:
    block = text.split("<!-- cluster-example:start -->")[1].split(
        "<!-- cluster-example:end -->", maxsplit=1
    )[0]
    return block.split("```toml\n")[1].split("```")[0]


def switched_on(toml_text: str) -> str:
    return "\n".join(
        line[2:] if _COMMENTED_KEY.match(line) else line for line in toml_text.splitlines()
    )


def key_paths(table: Any, prefix: str = "") -> set[str]:
    found: set[str] = set()
    if isinstance(table, dict):
        for key, value in table.items():
            path = f"{prefix}{key}"
            found.add(path)
            found |= key_paths(value, f"{path}.")
    elif isinstance(table, list):
        for item in table:
            found |= key_paths(item, f"{prefix[:-1]}[].")
    return found


def test_the_table_of_keys_is_current() -> None:
    reference = model_reference()
    text = DOC.read_text()
    assert reference.updated(reference.CLUSTER_FILE, text) == text, (
        "docs/cluster-file.md is stale: run `make docs`"
    )


def test_the_annotated_example_validates_as_written_and_with_every_key_on() -> None:
    written = example(DOC.read_text())
    parse_cluster(written)
    parse_cluster(switched_on(written))


def test_the_annotated_example_shows_every_key() -> None:
    shown = key_paths(tomllib.loads(switched_on(example(DOC.read_text()))))
    keys = {key for key, _, _ in model_reference().rows()}
    assert keys - shown == set(), "add these to the annotated example in docs/cluster-file.md"


def test_a_key_left_out_of_the_example_is_caught() -> None:
    without = switched_on(example(DOC.read_text())).replace("\nmtu = 9000", "\n")
    keys = {key for key, _, _ in model_reference().rows()}
    assert keys - key_paths(tomllib.loads(without)) == {"fabric.mtu"}
