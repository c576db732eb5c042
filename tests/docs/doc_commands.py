"""Find every `sparkrig …` command the README and the docs show, and resolve it against the CLI.

A command is found in a fenced shell block (a line that starts with `sparkrig` or `$ sparkrig`,
with its `\\` continuations) or in an inline code span that starts with `sparkrig `. It resolves
when its words name a command of the app and every option it gives is one that command takes.
"""

from __future__ import annotations

import functools
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from sparkrig.cli import app

ROOT = Path(__file__).resolve().parents[2]
SHELL_FENCES = {"bash", "sh", "shell", "console"}
_FENCE = re.compile(r"^(\s*)```+\s*([\w-]*)")
_INLINE = re.compile(r"`(sparkrig [^`]+)`")


@dataclass(frozen=True)
class DocCommand:
    page: Path
    line: int
    text: str

    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def doc_pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def commands_in(page: Path) -> list[DocCommand]:
    found: list[DocCommand] = []
    fence: str | None = None
    pending: tuple[int, str] | None = None
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1):
        opening = _FENCE.match(line)
        if opening:
            fence = None if fence is not None else opening.group(2).lower()
            pending = None
            continue
        if fence is not None:
            if fence not in SHELL_FENCES:
                continue
            body = line.strip().removeprefix("$ ")
            if pending is not None:
                start, text = pending
                text += " " + body.rstrip("\\").strip()
                pending = (start, text) if body.endswith("\\") else None
                if pending is None:
                    found.append(DocCommand(page, start, text))
                continue
            if body.startswith("sparkrig ") or body == "sparkrig":
                command = body.split(" #")[0].rstrip()
                if command.endswith("\\"):
                    pending = (number, command.rstrip("\\").strip())
                else:
                    found.append(DocCommand(page, number, command))
            continue
        for span in _INLINE.findall(line):
            found.append(DocCommand(page, number, span))
    return found


def _words(text: str) -> list[str]:
    for cut in (" | ", " && ", " > ", " 2>", " ; ", " || "):
        text = text.split(cut, maxsplit=1)[0]
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def _options(command: Any) -> set[str]:
    names = {"--help"}
    for param in command.params:
        names.update(param.opts)
        names.update(param.secondary_opts)
    return names


@functools.cache
def _root() -> Any:
    return typer.main.get_command(app)


def _resolve(words: list[str]) -> tuple[Any, list[str]]:
    """The command the leading words name, and those words (`fabric plan` of `fabric plan X`)."""
    command, path = _root(), []
    for word in words:
        sub = getattr(command, "commands", {}).get(word)
        if sub is None:
            break
        path.append(word)
        command = sub
    return command, path


def command_path(words: list[str]) -> list[str]:
    return _resolve(words)[1]


def problems(found: DocCommand) -> list[str]:
    """What in one documented command does not exist: a command word or an option."""
    words = _words(found.text)[1:]
    command, path = _resolve(words)
    words = words[len(path) :]
    path = ["sparkrig", *path]
    if getattr(command, "commands", None) and words and not words[0].startswith("-"):
        if words[0] in {"…", "...", "COMMAND", "CMD"}:
            return []
        return [f"`{' '.join(path)}` has no command `{words[0]}`"]
    known = _options(command)
    wrong = []
    for word in words:
        if not word.startswith("-") or word in {"-", "--"} or word.startswith("-…"):
            continue
        name = word.split("=")[0].rstrip(",.;:…")
        if name and name not in known:
            wrong.append(f"`{' '.join(path)}` has no option `{name}`")
    return wrong
