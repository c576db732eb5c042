"""Every numeric option of every command is range-checked while the command line is parsed.

Walks the real command tree, so a command added later without a range fails here."""

from __future__ import annotations

import types
import typing
from collections.abc import Iterator
from typing import Annotated, Any

import typer.main

from sparkrig.cli import app
from sparkrig.cli.common import SHARE, ranged


def _commands(command: Any, path: str = "sparkrig") -> Iterator[tuple[str, Any]]:
    yield path, command
    for name, sub in (getattr(command, "commands", None) or {}).items():
        yield from _commands(sub, f"{path} {name}")


def _is_number(annotation: Any) -> bool:
    if typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return any(_is_number(arg) for arg in typing.get_args(annotation))
    return annotation in (int, float)


def unranged_options(root: Any) -> list[str]:
    """`command --option` for every numeric option under `root` without a cli.common range."""
    unranged = []
    for path, command in _commands(typer.main.get_command(root)):
        if command.callback is None:
            continue
        hints = typing.get_type_hints(command.callback, include_extras=True)
        for param in command.params:
            if not _is_number(hints.get(param.name)):
                continue
            callback = getattr(param, "callback", None)
            if callback is None or "ranged" not in callback.__qualname__:
                unranged.append(f"{path} {param.opts[0] if param.opts else param.name}")
    return unranged


def test_every_numeric_option_has_a_range() -> None:
    unranged = unranged_options(app)
    assert unranged == [], f"numeric options without cli.common.ranged: {', '.join(unranged)}"


def test_the_walk_finds_an_option_without_a_range() -> None:
    """The check can fail: a command with an unranged number is reported, a ranged one is not."""
    probe = typer.Typer()

    @probe.command()
    def loose(count: int = 1, share: Annotated[float, ranged("a share", SHARE)] = 0.5) -> None:
        """A probe command."""

    @probe.command()
    def other() -> None:
        """A second command, so the probe is a group."""

    assert unranged_options(probe) == ["sparkrig loose --count"]
