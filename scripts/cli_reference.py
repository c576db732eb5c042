"""Write docs/cli.md's option reference, between its `<!-- cli-help:start -->` and
`<!-- cli-help:end -->` markers, from the commands themselves: for every command and subcommand
its usage line, its one-line help, and a table of its arguments and options (names, type or
choices, default, help).

The text depends on nothing but the code: no terminal width (nothing is wrapped), no machine
(a default computed from this machine, such as `up --threads`, is written as the rule its help
states), no absolute path of this checkout. tests/cli/test_cli_reference.py renders it again and
fails when docs/cli.md differs.

Run: make docs (or .venv/bin/python scripts/cli_reference.py)
"""

from __future__ import annotations

import inspect
import sys
import typing
from enum import Enum
from pathlib import Path, PurePath
from types import NoneType, UnionType
from typing import Any, Literal

import typer

from sparkrig.cli import app

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "cli.md"
START = "<!-- cli-help:start -->"
END = "<!-- cli-help:end -->"
PROGRAM = "sparkrig"

# Defaults computed from the machine the command runs on: written as the rule, not this
# machine's value (sparkrig.defaults says how each is computed).
MACHINE_DEFAULTS = {("up", "threads"): "all cores but one"}

TYPE_NAMES: dict[Any, str] = {
    int: "integer",
    float: "number",
    str: "text",
    Path: "path",
    bool: "flag",
}


def cell(text: str) -> str:
    """Text as one markdown table cell: one line, no column break, rich's escapes undone, and
    `<time>` shown, not read as an HTML tag."""
    text = " ".join(text.replace("\\[", "[").split())
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def type_text(annotation: Any, param: Any) -> str:
    """What the value is: `integer`, `path`, `corpus \\| filler`, `text, repeatable`."""
    if param.metavar:
        return f"`{param.metavar}`"
    args = [a for a in typing.get_args(annotation) if a is not NoneType]
    if typing.get_origin(annotation) in (typing.Union, UnionType) and len(args) == 1:
        annotation = args[0]
    if typing.get_origin(annotation) is Literal:
        return " \\| ".join(f"`{choice}`" for choice in typing.get_args(annotation))
    if typing.get_origin(annotation) is list:
        return f"{type_text(typing.get_args(annotation)[0], param)}, repeatable"
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return " \\| ".join(f"`{member.value}`" for member in annotation)
    return TYPE_NAMES.get(annotation, getattr(annotation, "__name__", str(annotation)))


def default_text(param: Any, command_path: str) -> str:
    """The default as a user types it; `—` where there is none (the help then says what
    applies)."""
    machine = MACHINE_DEFAULTS.get((command_path, param.name))
    if machine is not None:
        return machine
    value = param.default
    if value is None or value in ("", [], ()):
        return "—"
    if isinstance(value, bool):
        if param.param_type_name == "option" and param.secondary_opts:
            return f"`{param.opts[0] if value else param.secondary_opts[0]}`"
        return "on" if value else "off"
    if isinstance(value, PurePath) and str(value).startswith(str(ROOT)):
        raise ValueError(f"{command_path} {param.name}: a default inside this checkout")
    if isinstance(value, float):
        text = f"{value:g}"
    elif isinstance(value, list | tuple):
        text = ",".join(map(str, value))
    else:
        text = str(value.value if isinstance(value, Enum) else value)
    return f"`{text}`"


def usage(command: Any, path: list[str]) -> str:
    pieces = [PROGRAM, *path]
    if getattr(command, "commands", None) is not None:
        return " ".join([*pieces, "COMMAND", "[ARGS]..."])
    if any(p.param_type_name == "option" and not p.hidden for p in command.params):
        pieces.append("[OPTIONS]")
    for param in command.params:
        if param.param_type_name != "argument":
            continue
        name = (param.metavar or param.name).upper()
        name = f"{name}..." if param.nargs == -1 else name
        pieces.append(name if param.required else f"[{name}]")
    return " ".join(pieces)


def one_line_help(command: Any) -> str:
    """The first paragraph of the command's help, as one line."""
    text = inspect.cleandoc(command.help or command.short_help or "")
    return cell(text.split("\n\n")[0])


def rows(command: Any, command_path: str) -> list[str]:
    callback = getattr(command, "callback", None)
    hints = typing.get_type_hints(inspect.unwrap(callback)) if callback is not None else {}
    lines = []
    for param in command.params:
        if param.hidden:
            continue
        if param.param_type_name == "argument":
            names = f"`{(param.metavar or param.name).upper()}` (argument)"
        else:
            names = ", ".join(f"`{name}`" for name in [*param.opts, *param.secondary_opts])
        kind = type_text(hints.get(param.name, str), param)
        help_text = cell(getattr(param, "help", None) or "")
        lines.append(f"| {names} | {kind} | {default_text(param, command_path)} | {help_text} |")
    return lines


def section(command: Any, path: list[str]) -> list[str]:
    heading = "#" * min(3 + max(len(path) - 1, 0), 4)
    lines = [f"{heading} `{' '.join([PROGRAM, *path])}`", "", f"`{usage(command, path)}`", ""]
    if summary := one_line_help(command):
        lines += [summary, ""]
    table = rows(command, " ".join(path))
    if table:
        lines += ["| name | type | default | help |", "|---|---|---|---|", *table, ""]
    return lines


def walk(command: Any, path: list[str], context: Any) -> list[str]:
    lines = section(command, path)
    group = getattr(command, "commands", None)
    if group is None:
        return lines
    for name in command.list_commands(context):
        sub = group[name]
        if not sub.hidden:
            child = typer.Context(sub, info_name=name, parent=context)
            lines += walk(sub, [*path, name], child)
    return lines


def render() -> str:
    """The markdown between the markers, markers excluded."""
    root = typer.main.get_command(app)
    context = typer.Context(root, info_name=PROGRAM)
    note = (
        "Written by `make docs` (scripts/cli_reference.py) from the commands themselves; "
        "edit the commands' help, not this section."
    )
    return "\n".join(["", note, "", *walk(root, [], context)]).rstrip("\n") + "\n"


def updated(page: str, body: str) -> str:
    """`page` with the text between the markers replaced by `body`."""
    if page.count(START) != 1 or page.count(END) != 1 or page.index(START) > page.index(END):
        raise SystemExit(f"{PAGE.name} needs one {START} and, after it, one {END}")
    before, rest = page.split(START)
    _, after = rest.split(END)
    return f"{before}{START}\n{body}{END}{after}"


def main() -> int:
    page = PAGE.read_text(encoding="utf-8")
    new = updated(page, render())
    if new != page:
        PAGE.write_text(new, encoding="utf-8")
        print(f"wrote {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
