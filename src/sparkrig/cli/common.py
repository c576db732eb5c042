"""What every command module shares: the typer app, the consoles, common flags and parsers."""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from sparkrig import __version__, defaults
from sparkrig.cli.one_line import OneLineErrors
from sparkrig.errors import UsageError

app = typer.Typer(
    cls=OneLineErrors,
    help="Serve LLMs across a few directly wired GPU boxes, and prove output and speed are right.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
# A pipe or a file gets lines wide enough for every table: rich's default of 80 columns there
# cut cells to "concurr…" in `bench | tee`. A terminal keeps its own width; COLUMNS wins.
PIPE_WIDTH = 160
_piped = not sys.stdout.isatty() and "COLUMNS" not in os.environ
console = Console(width=PIPE_WIDTH if _piped else None)
err_console = Console(stderr=True)


def _shown(bound: float) -> str:
    """A number as a user types it: 2592000, not 2.592e+06; 0.5 stays 0.5, 1e+300 too."""
    return f"{bound:.0f}" if abs(bound) < 1e15 and bound % 1 == 0 else f"{bound:g}"


@dataclass(frozen=True)
class Range:
    """The values a numeric option accepts; checked while the command line is parsed, before any
    work, so a bad value is a one-line usage error and never a pydantic dump mid-run."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False  # low itself is excluded
    high_open: bool = False

    def problem(self, value: float) -> str | None:
        if not math.isfinite(value):
            return f"{value} is not a finite number: use {self.text()}"
        if self.low is not None and (value < self.low or (self.low_open and value == self.low)):
            return f"{_shown(value)} is too small: use {self.text()}"
        if self.high is not None and (value > self.high or (self.high_open and value == self.high)):
            return f"{_shown(value)} is too large: use {self.text()}"
        return None

    def text(self) -> str:
        parts = []
        if self.low is not None:
            parts.append(
                f"above {_shown(self.low)}" if self.low_open else f"{_shown(self.low)} or more"
            )
        if self.high is not None:
            parts.append(
                f"below {_shown(self.high)}" if self.high_open else f"at most {_shown(self.high)}"
            )
        return " and ".join(parts)


# Every numeric option's range, in one place; the models behind the options keep the same
# bounds (the defaults named here) as a second line.
COUNT = Range(low=1)
NON_NEGATIVE = Range(low=0)
POSITIVE = Range(low=0, low_open=True)
WAIT_SECONDS = Range(low=0, high=defaults.MAX_WAIT_S, low_open=True)
SHARE = Range(low=0, high=1, low_open=True, high_open=True)
FRACTION = Range(low=0, high=1, low_open=True)  # (0, 1]: 1 is all
PORT = Range(low=1, high=65535)
PORT_OR_ZERO = Range(low=0, high=65535)
SAMPLES = Range(low=defaults.BENCH_MIN_SAMPLES_CAP)
KV_BLOCK_TOKENS = Range(low=defaults.CHECK_MIN_KV_BLOCK_TOKENS)
NEEDLE_CAP_TOKENS = Range(low=defaults.CHECK_MIN_NEEDLE_CAP_TOKENS)
SLOTS = Range(low=1)
CONTEXT_TOKENS = Range(low=defaults.LOCAL_MIN_CONTEXT_TOKENS)
LOAD_CONCURRENCY = Range(low=2)


_IN_ANNOTATED: Any = object()


def ranged(help: str, within: Range, *flags: str, default: Any = _IN_ANNOTATED) -> Any:
    """A typer option whose value is checked against `within` before the command runs; inside
    `Annotated`, or with `default` as a parameter's default (`setting` in cli/model_options.py)."""

    def check(value: float | None) -> float | None:
        if value is not None and (problem := within.problem(value)) is not None:
            raise typer.BadParameter(problem)
        return value

    text = f"{help} [{within.text()}]"
    if default is _IN_ANNOTATED:
        return typer.Option(*flags, help=text, callback=check)
    return typer.Option(default, *flags, help=text, callback=check)


JsonFlag = Annotated[bool, typer.Option("--json", help="print machine-readable JSON")]
ForceFlag = Annotated[bool, typer.Option("--force", help="let --out replace an existing file")]
TelemetryFlag = Annotated[
    bool,
    typer.Option(
        help="sample this host every second (CPU, memory, swap, network; GPU through "
        "nvidia-ml-py when installed) into RECEIPT.telemetry.json, drawn in the report"
    ),
]
TelemetryClusterOption = Annotated[
    Path | None,
    typer.Option(
        "--cluster",
        "--telemetry-cluster",
        help="the server's cluster file: also sample every node through its \\[executor]",
    ),
]


def refuse_to_replace(
    path: Path,
    *,
    force: bool,
    flag: str = "--out",
    ours: Callable[[Path], bool] | None = None,
    what: str = "",
) -> None:
    """A run writes its receipt early and often; it must not replace a user's file (an earlier
    good receipt, or anything else) unless asked to. Checked before any work. Where sparkrig
    rewrites a file as a matter of course (a report page, a diag archive), `ours` says which
    files are `what` it wrote before: those are replaced, anything else only with --force."""
    if path.is_dir():
        raise UsageError(f"{flag} {path} is a directory — name a file, e.g. {path}/run.json")
    if force or not (path.exists() or path.is_symlink()):
        return
    if ours is not None and not path.is_symlink() and path.is_file() and ours(path):
        return
    not_ours = f" and is not {what}" if ours is not None else ""
    raise UsageError(
        f"{flag} {path} already exists{not_ours} — pick another path, or add --force to replace it"
    )


def receipt_out(out: Path | None, kind: str, *, force: bool, page: bool = True) -> Path:
    """`--out`, else `sparkrig-runs/KIND-<UTC time>.json`; refused before any work where it
    would replace a file without --force, and, where the run writes its report page beside the
    receipt (`page`), where that page would."""
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    out_path = out or Path("sparkrig-runs") / f"{kind}-{stamp}.json"
    refuse_to_replace(out_path, force=force)
    if page:
        if out_path.suffix.lower() == ".html":  # the page would be written over the receipt
            raise UsageError(
                f"--out {out_path} ends in .html, the name of the report page written beside "
                f"the receipt — name the receipt {out_path.with_suffix('.json').name}"
            )
        beside = out_path.with_suffix(".html")
        refuse_to_replace(beside, force=force, flag="the report page beside --out,")
    return out_path


def checked_target(url: str | None, local: bool, command: str) -> None:
    """A command that runs against a server takes its URL or --local, never both or neither; a
    URL that cannot work fails here, before anything runs."""
    if (url is None) == (not local):
        raise UsageError(f"give either a server URL or --local — e.g. `sparkrig {command} --local`")
    if url is not None:
        from sparkrig.client.http_failures import checked_base_url

        checked_base_url(url)


ApplyFlag = Annotated[bool, typer.Option("--apply", help="act; without it, only print the plan")]


def print_json(data: Any) -> None:
    """`--json` output: indented, and anything JSON lacks (a Path, a datetime) as its text."""
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def _print_version(value: bool) -> None:
    if value:
        console.print(__version__)
        raise typer.Exit()


@app.callback()
def _root(
    debug: Annotated[bool, typer.Option("--debug", help="show tracebacks on errors")] = False,
    version: Annotated[
        bool,
        typer.Option("--version", help="print the version", is_eager=True, callback=_print_version),
    ] = False,
) -> None:
    """Eager --version acts while the options are parsed, so it needs no command after it."""


# --- engine -----------------------------------------------------------------------------------


def speculative_options(
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


class Ladder(tuple[int, ...]):
    """A comma-separated list of whole numbers from the command line (`--concurrency 1,2,4`),
    already checked: the type of an option that `ladder` parses."""


def ladder(option: str, most: int) -> Callable[[str], Ladder]:
    """The parser of a ladder option (`setting(..., parse=ladder("--concurrency", 1024))`): each
    value 1 to `most`, refused in one line naming `option` while the command line is parsed.
    Its `metavar` is what the help shows in place of the value."""

    def parse(text: str | Ladder) -> Ladder:
        if isinstance(text, Ladder):  # click may hand a converted value back
            return text
        return Ladder(parse_ladder(text, option, most))

    parse.metavar = "N,..."  # type: ignore[attr-defined]
    return parse


def parse_ladder(
    text: str, option: str = "--concurrency", most: int = defaults.BENCH_MAX_CONCURRENCY
) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError as exc:
        raise UsageError(
            f"{option} {text!r} is not a list of whole numbers — e.g. 1,2,4,8"
        ) from exc
    if not values or any(value <= 0 for value in values):
        raise UsageError(f"{option} {text!r} needs values of 1 or more — e.g. 1,2,4,8")
    if (largest := max(values)) > most:
        raise UsageError(f"{option} {largest} is above {most} — a typo? use {most} or less")
    return values
