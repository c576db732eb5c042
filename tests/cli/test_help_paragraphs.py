"""`--help` prints each prose paragraph of a command's help as one paragraph for the terminal to
wrap, never the docstring's source line breaks (lines cut mid-sentence)."""

from __future__ import annotations

from typer.testing import CliRunner

from sparkrig.cli import app
from sparkrig.cli.help_text import reflowed


def _helps(typer_app: object) -> list[str]:
    found = [c.help or "" for c in typer_app.registered_commands]  # type: ignore[attr-defined]
    for group in typer_app.registered_groups:  # type: ignore[attr-defined]
        found += _helps(group.typer_instance)
    return found


def test_every_command_help_is_paragraphs() -> None:
    helps = _helps(app)
    assert len(helps) > 25
    for text in helps:
        for paragraph in text.split("\n\n"):
            lines = paragraph.splitlines()
            if not any(line.startswith((" ", "-", "*", "\b")) for line in lines):
                assert len(lines) == 1, paragraph


def test_a_wrapped_docstring_becomes_paragraphs_and_lists_keep_their_lines() -> None:
    text = "First line.\n\nA sentence cut\nacross two lines.\n\n- item one\n- item two"
    assert (
        reflowed(text)
        == "First line.\n\nA sentence cut across two lines.\n\n- item one\n- item two"
    )


def test_the_status_help_reads_whole_sentences() -> None:
    shown = CliRunner().invoke(app, ["status", "--help"], env={"COLUMNS": "200"}).output
    assert "and whether the cluster is ready (exit 1 when not)" in shown
