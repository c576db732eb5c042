"""docs/cli.md's option reference is what scripts/cli_reference.py writes from the commands today:
a renamed option, a new default or a new command fails here until `make docs` is run. The text
is the same on any terminal and in any checkout.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from tests.cli.test_shown_words import command_paths
from tests.docs.model_reference import script

ROOT = Path(__file__).resolve().parents[2]


def reference() -> ModuleType:
    return script("cli_reference")


def test_docs_cli_md_is_current() -> None:
    script = reference()
    page = script.PAGE.read_text(encoding="utf-8")
    if script.updated(page, script.render()) != page:
        pytest.fail("docs/cli.md is stale: run make docs")


def test_every_command_has_its_section() -> None:
    text = reference().render()
    for path in command_paths():
        assert f"# `{' '.join(['sparkrig', *path])}`\n" in text, path


def test_the_text_depends_on_neither_terminal_nor_checkout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    script = reference()
    monkeypatch.setenv("COLUMNS", "200")
    wide = script.render()
    monkeypatch.setenv("COLUMNS", "40")
    assert script.render() == wide
    assert str(ROOT) not in wide
    assert "| `--threads` | integer | all cores but one |" in wide  # not this machine's count


def test_a_renamed_option_shows_both_names_and_its_default() -> None:
    text = reference().render()
    assert "| `--out`, `--receipt` | path | `soak.json` |" in text
    assert "| `--cached`, `--no-cached` | flag | `--cached` |" in text
    assert "| `--prefill-text` | `corpus` \\| `filler` | `corpus` |" in text


def test_only_the_text_between_the_markers_is_replaced() -> None:
    script = reference()
    page = f"# top\n{script.START}\nold\n{script.END}\ntail\n"
    assert script.updated(page, "new\n") == f"# top\n{script.START}\nnew\n{script.END}\ntail\n"
    with pytest.raises(SystemExit, match="needs one"):
        script.updated("# no markers\n", "new\n")
