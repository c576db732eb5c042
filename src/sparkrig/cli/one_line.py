"""Every way a command can fail ends as one `error: what happened — how to fix it` line.

The root command group runs its commands with typer's standalone mode off and turns what comes
back into one line and an exit code here: sparkrig's own errors, typer's usage errors (instead of
its five-line box), a pydantic ValidationError that got past the option ranges (instead of
pydantic's dump with its URL), and an OSError that names a file. `--debug` re-raises instead, for
the traceback. The CLI's tests invoke the same group, so they see exactly what a user sees.
"""

from __future__ import annotations

import errno
import sys
from collections.abc import Sequence
from typing import Any

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from typer.core import TyperGroup

from sparkrig.cli import click_exceptions
from sparkrig.errors import SparkrigError, one_line, validation_problem

_USAGE_EXIT = 2


class OneLineErrors(TyperGroup):
    """The root group: its `main` is where every command's failure is turned into one line."""

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
        code = run_with_one_line_errors(
            lambda: super(OneLineErrors, self).main(
                args=argv,
                prog_name=prog_name or "sparkrig",
                complete_var=complete_var,
                standalone_mode=False,
                **extra,
            ),
            debug="--debug" in argv,
        )
        if standalone_mode:
            sys.exit(code)
        return code


def run_with_one_line_errors(command: Any, *, debug: bool) -> int:
    """Run `command()` and return the exit code it should end with; print one line on failure."""
    try:
        returned = command()
    except typer.Exit as exc:
        return int(exc.exit_code)
    except click_exceptions.NoArgsIsHelpError as exc:
        exc.show()  # the help text itself (rich has printed it already, and this is then empty)
        return _USAGE_EXIT
    except (typer.Abort, KeyboardInterrupt):
        Console(stderr=True).print("interrupted")
        return 130
    except Exception as exc:
        usage = isinstance(exc, click_exceptions.ClickException)
        described = None if debug and not usage else describe_failure(exc)
        if described is None:
            raise
        message, code = described
        # messages quote server text ("[/INST]" …): never let rich read it as markup
        Console(stderr=True).print(
            f"[red]error:[/] {escape(one_line(message))}", highlight=False, soft_wrap=True
        )
        return code
    return returned if isinstance(returned, int) else 0


def describe_failure(exc: Exception) -> tuple[str, int] | None:
    """The one line and exit code for a failure a user can fix; None for a bug (re-raised)."""
    if isinstance(exc, SparkrigError):
        return str(exc), exc.exit_code
    if isinstance(exc, click_exceptions.UsageError):
        return usage_line(exc), _USAGE_EXIT
    if isinstance(exc, click_exceptions.ClickException):
        return f"{exc.format_message()} — see `sparkrig --help`", exc.exit_code
    if isinstance(exc, ValidationError):
        return f"{validation_problem(exc)} — correct that value (see --help)", _USAGE_EXIT
    if isinstance(exc, OSError) and exc.filename is not None and exc.errno != errno.EPIPE:
        said = exc.strerror or type(exc).__name__
        return f"{exc.filename}: {said} — check the path and its permissions", 1
    return None


def usage_line(exc: click_exceptions.UsageError) -> str:
    """typer's usage box as one line: the problem, and the command whose --help explains it."""
    path = exc.ctx.command_path.split()[1:] if exc.ctx is not None else []
    command = " ".join(["sparkrig", *path])  # whatever name the program was started by
    message = exc.format_message().rstrip(".")
    return f"{message} — see `{command} --help`"
