"""A tutorial page as a test reads it: its shell blocks, where each runs, the output it shows.

Every ```bash block of a tutorial is preceded by a marker that says where it runs:

- `<!-- run: here -->` (or `<!-- run: here; exit 1 -->`): the tutorial test runs the block on
  this machine, as written, and checks the output shown after it;
- `<!-- run: tests/PATH.py -->`: that test runs each `sparkrig` command of the block, with every
  option shown (the namespace twin's journeys, the demo);
- `<!-- run: gpu -->`: it needs a GPU or a real Spark; its commands are still checked to exist.

A ```text block right after a shell block shows lines of the output of its commands: each must
appear in what the block printed, spaces and line breaks aside, `…` standing for anything.
"""

from __future__ import annotations

import ast
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from tests.docs.doc_commands import command_path

_MARKER = re.compile(r"<!--\s*run:\s*([^;>]+?)\s*(?:;\s*exit\s+(\d+)\s*)?-->")


@dataclass
class Block:
    line: int
    runs_in: str | None
    exit_code: int
    commands: list[str]
    shown: list[str] = field(default_factory=list)

    @property
    def where(self) -> str:
        return f"line {self.line}"


def blocks(page: Path) -> list[Block]:
    found: list[Block] = []
    marker: tuple[str, int] | None = None
    lines = page.read_text(encoding="utf-8").splitlines()
    number = 0
    while number < len(lines):
        line = lines[number]
        match = _MARKER.search(line)
        if match:
            marker = (match.group(1), int(match.group(2) or 0))
        elif line.startswith("```"):
            kind = line.strip("`").strip()
            end = number + 1
            while end < len(lines) and not lines[end].startswith("```"):
                end += 1
            body = [text for text in lines[number + 1 : end] if text.strip()]
            if kind == "bash":
                runs_in, exit_code = marker if marker else (None, 0)
                found.append(Block(number + 1, runs_in, exit_code, _joined(body)))
            elif kind == "text" and found and found[-1].line > number - 40 and not found[-1].shown:
                found[-1].shown = body
            marker = None
            number = end
        number += 1
    return found


def _joined(body: list[str]) -> list[str]:
    commands: list[str] = []
    pending = ""
    for text in body:
        pending += text.rstrip("\\").strip() + " " if text.endswith("\\") else text.strip()
        if not text.endswith("\\"):
            commands.append(pending.strip())
            pending = ""
    return commands


def _squeezed(text: str) -> str:
    return re.sub(r"\s+", "", text)


def missing_lines(shown: list[str], printed: str) -> list[str]:
    """The shown lines that the printed output does not hold, in order, `…` matching anything."""
    haystack = _squeezed(printed)
    missing = []
    for line in shown:
        at = 0
        for piece in (_squeezed(part) for part in line.split("…")):
            found = haystack.find(piece, at) if piece else at
            if found < 0:
                missing.append(line)
                break
            at = found + len(piece)
    return missing


def sparkrig_words(command: str) -> list[str]:
    words = shlex.split(command.split(" #", maxsplit=1)[0].rstrip("&").strip())
    return words[1:] if words and words[0] == "sparkrig" else []


def string_runs(test_file: Path) -> list[list[str]]:
    """Every call's and list's string arguments in a test file: the commands it can run."""
    runs = []
    for node in ast.walk(ast.parse(test_file.read_text(encoding="utf-8"))):
        items = node.args if isinstance(node, ast.Call) else getattr(node, "elts", None)
        if not isinstance(node, ast.Call | ast.List | ast.Tuple) or not items:
            continue
        strings = [
            item.value
            for item in items
            if isinstance(item, ast.Constant) and isinstance(item.value, str)
        ]
        if strings:
            runs.append(strings)
    return runs


def is_run_by(words: list[str], runs: list[list[str]]) -> bool:
    """Whether a test runs this command: its command words in order, and every option shown."""
    path = command_path(words)
    options = {word.split("=")[0] for word in words if word.startswith("--")}
    return any(
        [word for word in run if not word.startswith("-")][: len(path)] == path
        and options <= set(run)
        for run in runs
    )


def journey_mismatches(page: Path, test_file: str, steps: list[dict[str, object]]) -> list[str]:
    """What a tutorial shows for the blocks `test_file` runs that its journey's steps did not
    print: each block's output lines against the first later step that ran its last command."""
    wrong = []
    at = 0
    for block in blocks(page):
        if block.runs_in != test_file or not block.shown:
            continue
        words = sparkrig_words(block.commands[-1])
        ran = [sparkrig_words(str(step["step"])) for step in steps]
        match = next(
            (
                index
                for index in range(at, len(steps))
                if is_run_by(words, [ran[index]]) and _same_values(words, ran[index])
            ),
            None,
        )
        if match is None:
            wrong.append(f"{block.where}: no step of the journey ran `{block.commands[-1]}`")
            continue
        at = match + 1
        printed = f"{steps[match].get('stdout', '')}\n{steps[match].get('stderr', '')}"
        wrong.extend(
            f"{block.where}: `{steps[match]['step']}` printed no `{line}`"
            for line in missing_lines(block.shown, printed)
        )
    return wrong


def _option_values(words: list[str]) -> dict[str, str]:
    return {
        word: Path(value).name
        for word, value in zip(words, [*words[1:], ""], strict=True)
        if word.startswith("--") and value and not value.startswith("-")
    }


def _same_values(shown: list[str], ran: list[str]) -> bool:
    """An option the page gives a value (a file name) has that value in the step too."""
    values = _option_values(ran)
    return all(
        values.get(option, value) == value for option, value in _option_values(shown).items()
    )
