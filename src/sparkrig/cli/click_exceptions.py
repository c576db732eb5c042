"""The one door to the click that typer runs on: its exception types, which the one-line error
handler (`cli/one_line.py`) catches.

typer vendors click as the private package `typer._click` (from typer 0.26.0; before that click
was a separate install) and exports no public name for these types, so the private import is
made here, once, and nowhere else (tests/cli/test_typer_floor.py enforces both). pyproject.toml's
floor is the oldest typer this works with; tests/fixtures/typer/ says why and lists what that
version provides."""

from __future__ import annotations

from typer._click.exceptions import ClickException, NoArgsIsHelpError, UsageError

__all__ = ["ClickException", "NoArgsIsHelpError", "UsageError"]
