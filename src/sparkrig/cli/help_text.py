"""Command help as paragraphs: a docstring's lines are wrapped for the source, and typer (0.27 and
later, rich mode) prints their breaks as they are, so `--help` showed lines cut mid-sentence
("every node at" / "once, so ssh"). Each paragraph becomes one line for the terminal to wrap;
a paragraph of list items or indented lines keeps its breaks."""

from __future__ import annotations

import inspect

import typer


def reflowed(text: str) -> str:
    paragraphs = []
    for paragraph in text.strip().split("\n\n"):
        lines = paragraph.splitlines()
        if any(line.startswith((" ", "-", "*", "\b")) for line in lines):
            paragraphs.append(paragraph)
        else:
            paragraphs.append(" ".join(line.strip() for line in lines))
    return "\n\n".join(paragraphs)


def reflow_help(app: typer.Typer) -> None:
    """Give every command of `app` and of its sub-apps its help as paragraphs."""
    for command in app.registered_commands:
        text = command.help or (inspect.getdoc(command.callback) if command.callback else None)
        if text:
            command.help = reflowed(text)
    for group in app.registered_groups:
        if group.typer_instance is not None:
            reflow_help(group.typer_instance)
