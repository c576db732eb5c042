"""A setting is declared once: the option bound to a model field takes the field's default,
bounds and help, and is range-checked while the command line is parsed."""

from __future__ import annotations

import inspect
from typing import Any

import pytest
import typer
import typer.main
from pydantic import BaseModel, Field
from typer.testing import CliRunner

from sparkrig.bench.settings import BenchSettings
from sparkrig.cli import app
from sparkrig.cli.common import COUNT, SHARE, Ladder, Range, ladder
from sparkrig.cli.model_options import bound_values, range_of, setting
from sparkrig.errors import UsageError
from sparkrig.guards.settings import CheckSettings
from tests.hostile.test_every_numeric_option_has_a_range import unranged_options


class Knobs(BaseModel):
    share: float = Field(default=0.5, gt=0, lt=1, description="a share")
    count: int = Field(default=3, ge=1, description="a count")
    ceiling: int = Field(default=5, le=9, description="at most nine")
    name: str = Field(default="x", description="no bounds")
    levels: list[int] = Field(default_factory=lambda: [1, 4], description="a ladder")
    bare: int = 1


LEVELS = ladder("--levels", 8)


def _probe() -> typer.Typer:
    probe = typer.Typer()

    @probe.command()
    def run(
        share: float = setting(Knobs, "share"),
        number: int = setting(Knobs, "count", "--number"),
        ceiling: int = setting(Knobs, "ceiling"),
        name: str = setting(Knobs, "name"),
        levels: Ladder = setting(Knobs, "levels", parse=LEVELS),
    ) -> None:
        """Print what was parsed."""
        typer.echo(f"{share} {number} {ceiling} {name} {list(levels)}")

    @probe.command()
    def other() -> None:
        """A second command, so the probe is a group."""

    return probe


def _run(*args: str) -> Any:
    return CliRunner().invoke(_probe(), ["run", *args])


def test_bounds_become_the_range_the_options_always_had() -> None:
    assert range_of(Knobs.model_fields["share"]) == SHARE
    assert range_of(Knobs.model_fields["count"]) == COUNT
    assert range_of(Knobs.model_fields["ceiling"]) == Range(high=9)
    assert range_of(Knobs.model_fields["name"]) is None


def test_defaults_and_names_come_from_the_field() -> None:
    result = _run()
    assert result.exit_code == 0, result.output
    assert result.output.strip() == "0.5 3 5 x [1, 4]"
    assert _run("--number", "7", "--share", "0.25").output.strip() == "0.25 7 5 x [1, 4]"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--share", "1"], "1 is too large: use above 0 and below 1"),
        (["--share", "nan"], "nan is not a finite number"),
        (["--number", "0"], "0 is too small: use 1 or more"),
        (["--ceiling", "10"], "10 is too large: use at most 9"),
    ],
)
def test_a_value_out_of_the_field_bounds_fails_while_parsing(args: list[str], message: str) -> None:
    result = _run(*args)
    assert result.exit_code == 2
    assert message in result.output


def test_the_hostile_walk_sees_the_bound_options_as_ranged() -> None:
    assert unranged_options(_probe()) == []


def test_a_field_without_a_description_has_no_help_to_give() -> None:
    with pytest.raises(TypeError, match=r"Knobs\.bare has no description"):
        setting(Knobs, "bare")


def _defaults(command: str) -> dict[str, Any]:
    group = typer.main.get_command(app)
    found = group.commands[command]  # type: ignore[attr-defined]
    return {param.name: param.default for param in found.params}


def test_bench_and_check_options_are_their_settings_fields() -> None:
    bench, check = _defaults("bench"), _defaults("check")
    fields = BenchSettings()
    assert bench["precision"] == fields.precision
    assert bench["tokens"] == fields.decode_tokens
    assert bench["prompt_tokens"] == fields.prompt_tokens
    assert bench["cached"] is fields.cached_replays
    assert bench["client_processes"] is fields.client_processes
    assert check["needle_cap"] == CheckSettings().needle_cap_tokens
    assert check["kv_block_tokens"] is None


def test_a_list_setting_is_read_from_its_text_while_parsing() -> None:
    assert _run("--levels", "2,8").output.strip() == "0.5 3 5 x [2, 8]"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("2,x", "--levels '2,x' is not a list of whole numbers"),
        ("0", "--levels '0' needs values of 1 or more"),
        ("2,9", "--levels 9 is above 8"),
    ],
)
def test_a_list_setting_refused_while_parsing_never_runs_the_command(
    text: str, message: str
) -> None:
    result = _run("--levels", text)
    assert isinstance(result.exception, UsageError)
    assert message in str(result.exception)
    assert result.output == ""  # the command's body never ran


def test_bench_ladders_are_their_settings_fields() -> None:
    group = typer.main.get_command(app)
    params = {p.name: p for p in group.commands["bench"].params}  # type: ignore[attr-defined]
    fields = BenchSettings()
    for name in ("concurrency", "prefill_depths"):
        assert params[name].default == ",".join(map(str, getattr(fields, name)))
        assert BenchSettings.model_fields[name].description in (params[name].help or "")


def test_bound_values_are_the_bound_options_by_field_name() -> None:
    probe = typer.Typer()

    @probe.command()
    def run(
        ctx: typer.Context,
        number: int = setting(Knobs, "count", "--number"),
        name: str = setting(Knobs, "name"),
        levels: Ladder = setting(Knobs, "levels", parse=LEVELS),
        loose: int = typer.Option(1, help="bound to nothing"),
    ) -> None:
        """Print the bound values."""
        typer.echo(repr(bound_values(run, ctx.params, Knobs)))
        typer.echo(repr(bound_values(run, ctx.params, BenchSettings)))

    @probe.command()
    def other() -> None:
        """A second command, so the probe is a group."""

    result = CliRunner().invoke(probe, ["run", "--number", "7", "--levels", "2,3"])
    assert result.exit_code == 0, result.output
    knobs, bench = result.output.strip().splitlines()
    assert knobs == "{'count': 7, 'name': 'x', 'levels': (2, 3)}"
    assert bench == "{}"


def test_bench_and_check_build_their_settings_from_every_bound_option() -> None:
    """What `bench` and `check` hand to their settings models is every option bound to one of
    their fields, and nothing else: the fields each command used to list by hand."""
    group = typer.main.get_command(app)
    bound = {}
    for command, model in (("bench", BenchSettings), ("check", CheckSettings)):
        callback = group.commands[command].callback  # type: ignore[attr-defined]
        given = dict.fromkeys(inspect.signature(callback).parameters)
        bound[command] = set(bound_values(callback, given, model))
    assert bound["bench"] == {
        "precision",
        "max_samples",
        "decode_tokens",
        "concurrency",
        "prefill_depths",
        "prompt_tokens",
        "cached_replays",
        "rounds",
        "client_processes",
        "slo",
        "max_error_rate",
        "warmup_steady",
        "steady_warmup_tokens",
        "arrivals",
        "find_max_load",
        "prefill_text",
        "conversations",
        "turns",
        "parallel_conversations",
        "opening_tokens",
    }
    assert bound["check"] == {
        "quick",
        "kv_block_tokens",
        "needle_cap_tokens",
        "load_concurrency",
        "slots",
    }
