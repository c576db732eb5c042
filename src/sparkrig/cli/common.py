"""What every command module shares: the typer app, the consoles, common flags and parsers."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from sparkrig import __version__
from sparkrig.errors import UsageError

app = typer.Typer(
    help="Serve LLMs across a few directly wired GPU boxes, and prove output and speed are right.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
console = Console()
err_console = Console(stderr=True)

JsonFlag = Annotated[bool, typer.Option("--json", help="print machine-readable JSON")]
ApplyFlag = Annotated[bool, typer.Option("--apply", help="act; without it, only print the plan")]


def _print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


@app.callback()
def _root(
    debug: Annotated[bool, typer.Option("--debug", help="show tracebacks on errors")] = False,
    version: Annotated[bool, typer.Option("--version", help="print the version")] = False,
) -> None:
    if version:
        console.print(__version__)
        raise typer.Exit()


# --- engine -----------------------------------------------------------------------------------


def _speculative(
    spec_type: str | None, draft_model: Path | None, draft_max: int, synth_rates: str | None
) -> Any:
    from sparkrig.engines.llamacpp.server import SPEC_TYPES, SpeculativeOptions

    if spec_type is None:
        if synth_rates or draft_model:
            raise UsageError(
                "--draft-model and --spec-synth-rates need --spec-type — "
                "add --spec-type draft-simple"
            )
        return None
    if spec_type not in SPEC_TYPES:
        raise UsageError(
            f"--spec-type {spec_type} is not known — use one of {', '.join(SPEC_TYPES)}"
        )
    rates = None
    if synth_rates:
        try:
            rates = [float(part) for part in synth_rates.split(",")]
        except ValueError as exc:
            raise UsageError(
                f"--spec-synth-rates {synth_rates!r} is not a list of numbers — "
                "write e.g. 0.9,0.5,0.2"
            ) from exc
    return SpeculativeOptions(
        spec_type=spec_type, draft_model=draft_model, draft_max=draft_max, synth_rates=rates
    )


def _ladder(text: str, option: str = "--concurrency") -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError as exc:
        raise UsageError(
            f"{option} {text!r} is not a list of whole numbers — e.g. 1,2,4,8"
        ) from exc
    if not values or any(value <= 0 for value in values):
        raise UsageError(f"{option} {text!r} needs values of 1 or more — e.g. 1,2,4,8")
    return values
