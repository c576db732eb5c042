"""One concept, one option name, in every command: the output file is `--out` wherever a command
writes one, the API key's variable `--api-key-env`, a running server's URL `--server`, and so on.

The test walks every command and subcommand of the app, as click builds it, and reads each
option's names. A command may still accept an older spelling (soak's `--receipt`, doctor's
`--save`), so no user's script breaks, but only beside the canonical name, on the same option.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

import pytest
import typer
from typer.testing import CliRunner

from sparkrig.cli import app

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


class Concept(NamedTuple):
    canonical: str
    others: frozenset[str]
    """spellings seen in sparkrig before, or in the tools its users come from (vLLM's benchmark
    scripts, guidellm, aiperf): an option spelled so must also take `canonical`"""


CONCEPTS: dict[str, Concept] = {
    "output file": Concept(
        "--out",
        frozenset({"--receipt", "--save", "--output", "-o", "--output-path", "--output-file"}),
    ),
    "API key variable": Concept(
        "--api-key-env", frozenset({"--api-key", "--key-env", "--api-key-var", "--token-env"})
    ),
    "cluster file": Concept("--cluster", frozenset({"--telemetry-cluster", "--cluster-file"})),
    "running server": Concept(
        "--server", frozenset({"--live", "--server-url", "--base-url", "--endpoint"})
    ),
    "concurrency": Concept(
        "--concurrency",
        frozenset({"--max-concurrency", "--parallel", "--parallelism", "-c", "--num-concurrent"}),
    ),
    "model": Concept("--model", frozenset({"--model-id", "--model-name", "-m"})),
    "duration": Concept(
        "--duration", frozenset({"--duration-s", "--seconds", "--max-seconds", "--run-time"})
    ),
    "JSON output": Concept("--json", frozenset({"--as-json", "--json-output", "--output-json"})),
    "number of requests": Concept(
        "--requests", frozenset({"--num-requests", "--request-count", "--num-prompts"})
    ),
    "seed": Concept("--seed", frozenset({"--random-seed", "--rng-seed"})),
    "ready timeout": Concept("--ready-timeout", frozenset({"--ready-timeout-s", "--ready-s"})),
    "drain timeout": Concept("--drain-timeout", frozenset({"--drain-s", "--drain-timeout-s"})),
    "heartbeat timeout": Concept(
        "--liveness-timeout", frozenset({"--liveness", "--liveness-s", "--heartbeat-timeout"})
    ),
}

# Each rename kept its old spelling: (command, canonical, old).
RENAMED = [
    ("soak", "--out", "--receipt"),
    ("doctor", "--out", "--save"),
    ("doctor", "--server", "--live"),
    ("bench", "--cluster", "--telemetry-cluster"),
    ("check", "--cluster", "--telemetry-cluster"),
    ("gateway serve", "--drain-timeout", "--drain-s"),
    ("fabric test", "--liveness-timeout", "--liveness"),
]


def commands(command: Any = None, path: str = "") -> dict[str, Any]:
    """Every command that runs (not the groups), by its path: `fabric test`, `bench`."""
    command = typer.main.get_command(app) if command is None else command
    group = getattr(command, "commands", None)
    if group is None:
        return {path: command}
    found: dict[str, Any] = {}
    for name, sub in group.items():
        found |= commands(sub, f"{path} {name}".strip())
    return found


def option_names(command: Any) -> list[list[str]]:
    """Each option's names (`--out`, `--receipt`), its off switch (`--no-cached`) included."""
    return [
        [*param.opts, *param.secondary_opts]
        for param in command.params
        if param.param_type_name == "option"
    ]


def misnamed(named: dict[str, list[list[str]]]) -> list[str]:
    """'command: --x (concept: also accept --y)' for each option spelled another way only."""
    problems = []
    for path, options in sorted(named.items()):
        for names in options:
            for concept, (canonical, others) in CONCEPTS.items():
                other = sorted(others & set(names))
                if other and canonical not in names:
                    problems.append(
                        f"{path}: {'/'.join(names)} ({concept}: also accept {canonical})"
                    )
    return problems


def test_the_walk_reaches_every_subcommand() -> None:
    found = commands()
    assert {"bench", "soak", "fabric test", "gateway serve", "engine install"} <= set(found)
    assert "fabric" not in found  # a group has no options of its own to read here


def test_no_command_spells_a_concept_another_way_only() -> None:
    named = {path: option_names(command) for path, command in commands().items()}
    assert not misnamed(named), "\n".join(misnamed(named))


def test_the_check_names_an_option_spelled_another_way() -> None:
    named = {"ask": [["--model-id"], ["--api-key-env"]], "soak": [["--out", "--receipt"]]}
    assert misnamed(named) == ["ask: --model-id (model: also accept --model)"]


@pytest.mark.parametrize(("path", "canonical", "old"), RENAMED)
def test_a_renamed_option_keeps_its_old_spelling(path: str, canonical: str, old: str) -> None:
    names = next(n for n in option_names(commands()[path]) if canonical in n)
    assert old in names, f"{path} {canonical} no longer accepts {old}"
    assert names.index(canonical) < names.index(old), "--help and errors lead with the new name"


@pytest.mark.parametrize("flag", ["--out", "--save"])
def test_doctor_writes_its_captures_under_either_name(tmp_path: Path, flag: str) -> None:
    saved = tmp_path / "captures"
    result = CliRunner().invoke(
        app, ["doctor", "--load", str(FIXTURES / "doctor" / "vm"), flag, str(saved), "--json"]
    )
    assert result.exit_code in (0, 1), result.output  # 1: a finding of the capture, not of us
    assert any(saved.iterdir()), f"doctor {flag} wrote nothing"
