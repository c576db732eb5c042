"""Whether this machine reaches the head's API: the plan knows when the API is on a cable, the
verdict is read from real `ip -j route` answers (tests/fixtures/ip_route), and the warning
appears only when the API is on a cable this machine has no way to."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from sparkrig.config import load_cluster, parse_cluster
from sparkrig.fabric.runner import CommandResult
from sparkrig.launch.api_reach import (
    RouteAnswer,
    api_reach_warning,
    ask_route,
    route_verdict,
    unreached_api_warning,
)
from sparkrig.launch.cluster_plan import LaunchPlan, plan_launch
from sparkrig.launch.executors import LocalExecutor

ROOT = Path(__file__).parents[2]
ROUTES = ROOT / "tests" / "fixtures" / "ip_route"
RING4 = (ROOT / "examples" / "ring4-vllm.toml").read_text()
FIX = (
    "set engine.api_address to an address this machine reaches, or give every node a "
    "management address (the API then takes head a's)"
)


def captured(case: str) -> tuple[CommandResult, CommandResult]:
    both = json.loads((ROUTES / f"{case}.json").read_text())
    return CommandResult(**both["get"]), CommandResult(**both["match"])


class Replay:
    """This machine, answering the two route commands as the case's namespace did, whatever
    address is asked (the plan's is 10.20.0.1; a case asked its own)."""

    description = "local"

    def __init__(self, case: str) -> None:
        self.answers = {tuple(r.argv[:-1]): r for r in captured(case)}
        self.asked: list[list[str]] = []

    def run(self, argv: Sequence[str], *, timeout: float | None = None) -> CommandResult:
        self.asked.append(list(argv))
        return self.answers[tuple(argv[:-1])]


def plan_of(text: str) -> LaunchPlan:
    return plan_launch(parse_cluster(text), local_state_dir=Path("/state"))


@pytest.mark.parametrize(
    ("case", "reach", "detail"),
    [
        ("no-route", "no-route", "RTNETLINK answers: Network is unreachable"),
        ("default-route", "default-route", "via 192.168.1.1 dev d1"),
        ("on-a-cable", "reached", "dev d0"),
        ("own-address", "reached", "an address of this machine"),
        ("route-of-its-own", "reached", "via 192.168.1.7 dev d1"),
    ],
)
def test_the_route_verdict_reads_what_ip_answered(case: str, reach: str, detail: str) -> None:
    assert route_verdict(*captured(case)) == RouteAnswer(reach, detail)  # type: ignore[arg-type]
    runner = Replay(case)
    assert ask_route(runner, captured(case)[0].argv[-1]).reach == reach
    if reach == "no-route":  # no route: nothing more to ask
        assert [argv[3] for argv in runner.asked] == ["get"]


def test_an_answer_it_cannot_read_is_unknown_never_reached() -> None:
    chosen, _ = captured("default-route")
    garbled = chosen.model_copy(update={"stdout": "not json"})
    assert route_verdict(garbled, None).reach == "unknown"
    refused = chosen.model_copy(update={"returncode": 1, "stdout": "", "stderr": "Error: any\n"})
    assert route_verdict(refused, None) == RouteAnswer("unknown", "Error: any")


def test_without_ip_the_answer_is_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "")
    assert ask_route(LocalExecutor(), "10.20.0.1") == RouteAnswer(
        "unknown", "ip could not run here"
    )


def test_this_machines_own_loopback_is_reached() -> None:
    assert ask_route(LocalExecutor(), "127.0.0.1").reach == "reached"


def test_the_plan_knows_an_api_on_a_cable() -> None:
    """No management LAN and no api_address: the head's control address is a cable's."""
    plan = plan_of(RING4)
    assert plan.api_url == "http://10.20.0.1:8000"
    assert plan.api_on_cables
    chosen = plan_of(RING4.replace("[engine]\n", '[engine]\napi_address = "192.168.1.50"\n'))
    assert not chosen.api_on_cables
    lan = load_cluster(ROOT / "examples" / "pair-vllm.toml")
    assert not plan_launch(lan, local_state_dir=Path("/state")).api_on_cables


@pytest.mark.parametrize(
    ("case", "why"),
    [
        ("no-route", "this machine has no route to it (RTNETLINK answers: Network is unreachable)"),
        (
            "default-route",
            "this machine would send it to its default route (via 192.168.1.1 dev d1)",
        ),
    ],
)
def test_an_api_on_a_cable_this_machine_has_no_way_to_is_warned_about(case: str, why: str) -> None:
    warning = unreached_api_warning(plan_of(RING4), Replay(case))
    assert warning == (
        "the API is planned at 10.20.0.1, a cable address only the cluster's nodes reach, and "
        f"{why} — {FIX}"
    )
    assert "\n" not in warning


@pytest.mark.parametrize("case", ["on-a-cable", "own-address", "route-of-its-own"])
def test_an_api_this_machine_reaches_is_not_warned_about(case: str) -> None:
    assert unreached_api_warning(plan_of(RING4), Replay(case)) is None


def test_nothing_is_asked_or_said_when_the_api_is_off_the_cables_or_this_machine_is_the_head() -> (
    None
):
    lan = RING4.replace("[engine]\n", '[engine]\napi_address = "192.168.1.50"\n')
    here = RING4.replace(
        'ssh = "admin@spark-a"', 'ssh = "admin@spark-a"\nexecutor = { kind = "local" }'
    )
    for text in (lan, here):
        runner = Replay("no-route")
        assert unreached_api_warning(plan_of(text), runner) is None
        assert runner.asked == []


def test_an_unknown_route_still_warns_and_says_why() -> None:
    warning = api_reach_warning(plan_of(RING4), RouteAnswer("unknown", "ip could not run here"))
    assert warning is not None
    assert "this machine's route to it is unknown (ip could not run here)" in warning
    assert warning.endswith(FIX)
