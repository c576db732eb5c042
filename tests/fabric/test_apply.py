"""apply / restore with a recording runner: the journal holds the undo for the state found."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from sparkrig.config import load_cluster
from sparkrig.errors import FabricError, StateError
from sparkrig.fabric.apply import apply_plan, load_journal, restore
from sparkrig.fabric.plan import plan_fabric
from sparkrig.fabric.runner import CommandResult, ExecutorSpec

EXAMPLES = Path(__file__).parents[2] / "examples"


class RecordingRunner:
    """A node whose links start at MTU 1500 (one at 9000 and up already); fails on demand."""

    description = "fake"

    def __init__(self, fail_on: str | None = None) -> None:
        self.ran: list[list[str]] = []
        self.fail_on = fail_on

    def run(self, argv: Sequence[str], *, timeout: float | None = None) -> CommandResult:
        argv = list(argv)
        self.ran.append(argv)
        joined = " ".join(argv)
        if argv[:3] == ["ip", "-j", "link"]:
            dev = argv[-1]
            already = dev == "enP2p1s0f0np0"
            link = {"mtu": 9000 if already else 1500, "flags": ["UP"] if already else []}
            return CommandResult(argv=argv, returncode=0, stdout=json.dumps([link]), stderr="")
        if argv[:2] == ["sysctl", "-n"]:
            return CommandResult(argv=argv, returncode=0, stdout="0\n", stderr="")
        if self.fail_on and self.fail_on in joined:
            return CommandResult(
                argv=argv, returncode=2, stdout="", stderr="RTNETLINK answers: boom"
            )
        if "10.20.1.1/24" in joined and "add" in argv:
            return CommandResult(argv=argv, returncode=2, stdout="", stderr="Error: File exists")
        return CommandResult(argv=argv, returncode=0, stdout="", stderr="")


def test_apply_journals_undo_for_the_state_found(tmp_path: Path) -> None:
    plan = plan_fabric(load_cluster(EXAMPLES / "pair.toml"))
    runners = {"spark1": RecordingRunner(), "spark2": RecordingRunner()}
    specs = {n: ExecutorSpec(kind="netns", target=f"ns-{n}") for n in runners}
    path = tmp_path / "pair.json"
    journal = apply_plan(plan, runners, specs, path)
    assert journal.complete
    on_spark1 = [e for e in journal.entries if e.node == "spark1"]
    mtu = next(e for e in on_spark1 if e.kind == "mtu" and e.target == "enp1s0f0np0")
    assert mtu.undo == ["ip", "link", "set", "dev", "enp1s0f0np0", "mtu", "1500"]
    untouched = next(e for e in on_spark1 if e.kind == "mtu" and e.target == "enP2p1s0f0np0")
    assert untouched.ran is None
    assert untouched.undo is None
    assert untouched.found == "mtu 9000"
    existing = next(e for e in on_spark1 if e.kind == "address" and e.value == "10.20.1.1/24")
    assert existing.undo is None
    assert "already present" in existing.found
    assert load_journal(path) == journal
    with pytest.raises(FabricError, match="already applied"):
        apply_plan(plan, runners, specs, path)


def test_failure_half_way_names_the_restore(tmp_path: Path) -> None:
    plan = plan_fabric(load_cluster(EXAMPLES / "ring4.toml"))
    runners = {
        n: RecordingRunner(fail_on="ip route add" if n == "c" else None) for n in plan.rank_order
    }
    specs = {n: ExecutorSpec(kind="local") for n in runners}
    path = tmp_path / "ring4.json"
    with pytest.raises(FabricError) as caught:
        apply_plan(plan, runners, specs, path)
    message = str(caught.value)
    assert "node c (fake): `ip route add 10.20.0.1/32" in message
    assert "RTNETLINK answers: boom" in message
    assert "--restore" in message
    journal = load_journal(path)
    assert not journal.complete
    assert {e.node for e in journal.entries} == {"a", "b", "c"}

    undo_runner = RecordingRunner()
    restore(path, lambda spec: undo_runner)
    undone = [e.undo for e in reversed(journal.entries) if e.undo]
    assert undo_runner.ran == undone
    assert not path.exists()


def test_restore_replays_undos_newest_first(tmp_path: Path) -> None:
    plan = plan_fabric(load_cluster(EXAMPLES / "pair.toml"))
    runners = {"spark1": RecordingRunner(), "spark2": RecordingRunner()}
    specs = {n: ExecutorSpec(kind="netns", target=n) for n in runners}
    path = tmp_path / "pair.json"
    journal = apply_plan(plan, runners, specs, path)
    undo_runners = {n: RecordingRunner() for n in runners}
    restore(path, lambda spec: undo_runners[spec.target or ""])
    expected = [e.undo for e in reversed(journal.entries) if e.node == "spark2" and e.undo]
    assert undo_runners["spark2"].ran == expected
    assert not path.exists()


def test_failed_undo_stays_in_the_journal(tmp_path: Path) -> None:
    plan = plan_fabric(load_cluster(EXAMPLES / "pair.toml"))
    runners = {"spark1": RecordingRunner(), "spark2": RecordingRunner()}
    specs = {n: ExecutorSpec(kind="netns", target=n) for n in runners}
    path = tmp_path / "pair.json"
    apply_plan(plan, runners, specs, path)
    failing = {"spark1": RecordingRunner(fail_on="address del"), "spark2": RecordingRunner()}
    with pytest.raises(FabricError, match="undo\\(s\\) failed"):
        restore(path, lambda spec: failing[spec.target or ""])
    left = load_journal(path)
    assert left.entries
    assert all(e.kind == "address" and e.node == "spark1" for e in left.entries)


def test_restore_without_journal(tmp_path: Path) -> None:
    with pytest.raises(StateError, match="nothing to restore"):
        restore(tmp_path / "none.json", lambda spec: RecordingRunner())
