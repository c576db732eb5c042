"""apply / restore with a recording runner: the journal holds the undo for the state found,
for the links and addresses and for the files a rank reads (the NCCL graph XML)."""

from __future__ import annotations

import base64
import json
import shlex
from collections.abc import Sequence
from pathlib import Path

import pytest

from sparkrig.config import load_cluster, parse_cluster
from sparkrig.errors import FabricError, StateError
from sparkrig.fabric.apply import JournalEntry, apply_plan, load_journal, restore
from sparkrig.fabric.plan import plan_fabric
from sparkrig.fabric.plan_model import FabricPlan
from sparkrig.fabric.runner import CommandResult, ExecutorSpec
from sparkrig.fabric.steps import (
    describe_bytes,
    read_file_argv,
    write_back_argv,
    write_file_argv,
)
from sparkrig.launch.executors import LocalExecutor

EXAMPLES = Path(__file__).parents[2] / "examples"


class RecordingRunner:
    """A node whose links start at MTU 1500 (one at 9000 and up already); fails on demand.
    Its files live in `files` (path -> bytes), or with `real_files` on this machine's disk
    through the real `sh` scripts (tests point `fabric.node_dir` into tmp_path)."""

    description = "fake"

    def __init__(
        self,
        fail_on: str | None = None,
        files: dict[str, bytes] | None = None,
        *,
        real_files: bool = False,
    ) -> None:
        self.ran: list[list[str]] = []
        self.fail_on = fail_on
        self.files = files if files is not None else {}
        self.real_files = real_files

    def run(self, argv: Sequence[str], *, timeout: float | None = None) -> CommandResult:
        argv = list(argv)
        self.ran.append(argv)
        joined = " ".join(argv)
        if argv[0] in ("sh", "rm"):
            if self.real_files:
                return LocalExecutor().run(argv)
            return self._file_command(argv)
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

    def _file_command(self, argv: list[str]) -> CommandResult:
        path, stdout = argv[-1], ""
        if argv == read_file_argv(path):
            held = self.files.get(path)
            stdout = "absent\n" if held is None else "present\n" + base64.encodebytes(held).decode()
        elif argv == write_file_argv(path, argv[-2]):
            self.files[path] = argv[-2].encode()
        elif argv == write_back_argv(path, argv[-2]):
            self.files[path] = base64.b64decode(argv[-2])
        elif argv == ["rm", "-f", path]:
            self.files.pop(path, None)
        else:
            raise AssertionError(f"not a file command of the steps: {argv[:3]}")
        return CommandResult(argv=argv, returncode=0, stdout=stdout, stderr="")


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


# what another plan (or a person) left at the graph's path: CR, NUL and a byte no UTF-8 holds
OTHER = b"<graphs>another ring</graphs>\r\n\x00\xff"


def _ring4(node_dir: Path | None = None) -> FabricPlan:
    text = (EXAMPLES / "ring4.toml").read_text()
    if node_dir is not None:  # the last table of the example is [fabric]
        text += f'node_dir = "{node_dir}"\n'
    return plan_fabric(parse_cluster(text))


def _graph(plan: FabricPlan, node: str) -> tuple[str, str]:
    ((path, text),) = plan.node(node).node_files.items()
    return path, text


def _file_entries(entries: list[JournalEntry]) -> dict[str, JournalEntry]:
    return {e.node: e for e in entries if e.kind == "file"}


def test_the_graph_file_is_journaled_as_absent_same_or_other(tmp_path: Path) -> None:
    plan = _ring4()
    paths = {node: _graph(plan, node)[0] for node in plan.rank_order}
    assert paths["a"] == "/etc/sparkrig/nccl-graph-a.xml"  # the path NCCL_GRAPH_FILE names
    runners = {node: RecordingRunner() for node in plan.rank_order}
    runners["b"].files[paths["b"]] = _graph(plan, "b")[1].encode()
    runners["c"].files[paths["c"]] = OTHER
    specs = {n: ExecutorSpec(kind="local") for n in runners}
    journal = apply_plan(plan, runners, specs, tmp_path / "ring4.json")
    files = _file_entries(journal.entries)

    path, text = _graph(plan, "a")  # absent: written, undone by removing it
    assert files["a"].found == "absent"
    assert files["a"].ran == write_file_argv(path, text)
    assert files["a"].undo == ["rm", "-f", path]
    assert runners["a"].files[path] == text.encode()
    assert files["b"].ran is None  # the plan's content already: left alone, nothing to undo
    assert files["b"].undo is None
    assert files["b"].found == describe_bytes(_graph(plan, "b")[1].encode())
    encoded = base64.b64encode(OTHER).decode()  # other content: undone by writing it back
    assert files["c"].undo == write_back_argv(paths["c"], encoded)
    assert files["c"].found == describe_bytes(OTHER)
    assert runners["c"].files[paths["c"]] == _graph(plan, "c")[1].encode()
    # what a person reads: the path, size and digest, never the XML or the old bytes
    assert files["c"].undo_shown == f"write back {paths['c']} ({describe_bytes(OTHER)})"
    assert files["a"].undo_shown == f"rm -f {paths['a']}"
    assert "<graphs" not in files["a"].undo_shown + files["c"].undo_shown


def test_restore_removes_written_files_and_writes_back_what_was_there(tmp_path: Path) -> None:
    plan = _ring4()
    paths = {node: _graph(plan, node)[0] for node in plan.rank_order}
    runners = {node: RecordingRunner() for node in plan.rank_order}
    runners["b"].files[paths["b"]] = _graph(plan, "b")[1].encode()
    runners["c"].files[paths["c"]] = OTHER
    specs = {n: ExecutorSpec(kind="netns", target=n) for n in runners}
    path = tmp_path / "ring4.json"
    apply_plan(plan, runners, specs, path)
    restore(path, lambda spec: runners[spec.target or ""])
    assert paths["a"] not in runners["a"].files
    assert runners["b"].files[paths["b"]] == _graph(plan, "b")[1].encode()  # it was there
    assert runners["c"].files[paths["c"]] == OTHER
    assert not path.exists()


def test_the_real_scripts_write_atomically_and_restore_the_exact_bytes(tmp_path: Path) -> None:
    """The steps' `sh` scripts and base64 round trip on this machine's disk: a folder made on
    the way, the plan's text in place with no temporary file left, other bytes (CR, NUL, not
    UTF-8) written back exactly, the plan's own file left as it was."""
    node_dir = tmp_path / "etc" / "sparkrig"
    plan = _ring4(node_dir)
    paths = {node: Path(_graph(plan, node)[0]) for node in plan.rank_order}
    assert paths["a"] == node_dir / "nccl-graph-a.xml"
    runners = {node: RecordingRunner(real_files=True) for node in plan.rank_order}
    specs = {n: ExecutorSpec(kind="local") for n in runners}
    journal_file = tmp_path / "ring4.json"
    apply_plan(plan, runners, specs, journal_file)
    restore(journal_file, lambda spec: RecordingRunner(real_files=True))
    assert not node_dir.exists() or list(node_dir.iterdir()) == []

    node_dir.mkdir(parents=True, exist_ok=True)
    paths["a"].write_bytes(OTHER)
    paths["b"].write_text(_graph(plan, "b")[1])
    journal = apply_plan(plan, runners, specs, journal_file)
    files = _file_entries(journal.entries)
    assert files["a"].found == describe_bytes(OTHER)
    assert files["b"].ran is None
    assert files["c"].found == "absent"
    for node, where in paths.items():
        assert where.read_text() == _graph(plan, node)[1]
    assert sorted(p.name for p in node_dir.iterdir()) == sorted(p.name for p in paths.values())
    restore(journal_file, lambda spec: RecordingRunner(real_files=True))
    assert paths["a"].read_bytes() == OTHER
    assert paths["b"].read_text() == _graph(plan, "b")[1]
    assert not paths["c"].exists()
    assert not paths["d"].exists()


def test_a_folder_at_the_graph_path_stops_apply_naming_it(tmp_path: Path) -> None:
    node_dir = tmp_path / "node"
    plan = _ring4(node_dir)
    path = _graph(plan, "a")[0]
    Path(path).mkdir(parents=True)  # what docker's -v makes for a missing source
    runners = {node: RecordingRunner(real_files=True) for node in plan.rank_order}
    specs = {n: ExecutorSpec(kind="local") for n in runners}
    with pytest.raises(FabricError) as caught:
        apply_plan(plan, runners, specs, tmp_path / "ring4.json")
    assert f"node a (fake): cannot read {path}" in str(caught.value)
    assert "not a folder" in str(caught.value)
    assert "--restore" in str(caught.value)
    assert Path(path).is_dir()  # nothing was written into it


def test_plans_without_a_graph_have_no_file_step(tmp_path: Path) -> None:
    plan = plan_fabric(load_cluster(EXAMPLES / "pair.toml"))
    runners = {"spark1": RecordingRunner(), "spark2": RecordingRunner()}
    specs = {n: ExecutorSpec(kind="local") for n in runners}
    journal = apply_plan(plan, runners, specs, tmp_path / "pair.json")
    assert [e for e in journal.entries if e.kind == "file"] == []
    assert all(r.files == {} for r in runners.values())


def test_the_printed_plan_shows_the_file_short_and_the_script_writes_it(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from sparkrig.cli import app
    from sparkrig.fabric.render import ip_script

    plan = _ring4()
    path, text = _graph(plan, "a")
    args = ["fabric", "apply", str(EXAMPLES / "ring4.toml"), "--executor", "netns"]
    done = CliRunner().invoke(
        app, [*args, "--netns-prefix", "x-"], env={"SPARKRIG_STATE_DIR": str(tmp_path)}
    )
    assert done.exit_code == 0, done.output
    assert f"  write {path} ({describe_bytes(text.encode())})\n" in done.output
    assert "<graphs" not in done.output
    assert not list(tmp_path.iterdir())  # nothing applied, nothing journaled
    # the rendered script runs the same step in full; its undo removes the file
    assert ip_script(plan, "a").endswith(shlex.join(write_file_argv(path, text)) + "\n")
    assert ip_script(plan, "a", undo=True).splitlines()[4] == f"rm -f {path}"
