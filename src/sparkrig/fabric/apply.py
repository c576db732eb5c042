"""Apply a plan to the nodes through injected runners, journaling every change with the undo
for the state it found; restore replays those undos in reverse.

The journal is rewritten after every change, so a failure half-way leaves an exact record of
what to undo.
"""

from __future__ import annotations

import base64
import binascii
import json
import shlex
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import AwareDatetime, BaseModel, Field

from sparkrig.errors import FabricError, StateError
from sparkrig.fabric.plan_model import FabricPlan
from sparkrig.fabric.runner import CommandRunner, ExecutorSpec
from sparkrig.fabric.steps import (
    ARGUMENT_MAX_BYTES,
    Step,
    describe_bytes,
    node_steps,
    read_file_argv,
    write_back_argv,
)
from sparkrig.json_files import read_model_file, write_atomically
from sparkrig.paths import state_dir

ALREADY_THERE = "File exists"
ABSENT = "absent"


class JournalEntry(BaseModel):
    node: str
    kind: str
    target: str
    value: str
    ran: list[str] | None = Field(description="the command that changed it; None: no change")
    undo: list[str] | None = Field(description="restores what was there before; None: nothing")
    found: str = Field(description="the state before, in words")

    @property
    def undo_shown(self) -> str:
        """The undo in one line; a file's old content stays in the journal, not on the
        terminal."""
        if self.kind == "file" and self.undo is not None and self.found != ABSENT:
            return f"write back {self.target} ({self.found})"
        return " ".join(self.undo or [])


class FabricJournal(BaseModel):
    version: Literal[1] = 1
    cluster: str
    applied_at: AwareDatetime
    executors: dict[str, ExecutorSpec]
    entries: list[JournalEntry] = Field(default_factory=list)
    complete: bool = False


def journal_path(cluster: str) -> Path:
    return state_dir() / "fabric" / f"{cluster}.json"


def save_journal(journal: FabricJournal, path: Path) -> None:
    write_atomically(journal, path)


def load_journal(path: Path) -> FabricJournal:
    if not path.exists() and not path.is_symlink():
        raise StateError(
            f"no fabric journal at {path} — nothing to restore (apply first, or check "
            "SPARKRIG_STATE_DIR)"
        )
    return read_model_file(
        path,
        FabricJournal,
        what="fabric journal",
        error=StateError,
        fix="inspect it; the changes it lists must be undone by hand",
    )


def apply_plan(
    plan: FabricPlan,
    runners: Mapping[str, CommandRunner],
    executors: Mapping[str, ExecutorSpec],
    path: Path,
) -> FabricJournal:
    """Apply every node in `runners` (all nodes, or the local one) in rank order."""
    if path.exists():
        raise FabricError(
            f"the fabric of {plan.cluster} is already applied (journal {path}) — run "
            "`sparkrig fabric apply CLUSTER --restore` first"
        )
    journal = FabricJournal(
        cluster=plan.cluster,
        applied_at=datetime.now(UTC),
        executors={node: executors[node] for node in plan.rank_order if node in runners},
    )
    save_journal(journal, path)
    for node in plan.rank_order:
        if node not in runners:
            continue
        for step in node_steps(plan, node):
            try:
                entry = _apply_step(step, runners[node])
            except FabricError as exc:
                changed = sum(1 for e in journal.entries if e.undo is not None)
                raise FabricError(
                    f"{exc} ({changed} change(s) before it are journaled in {path}; "
                    "`fabric apply CLUSTER --restore` undoes them)"
                ) from exc
            journal.entries.append(entry)
            save_journal(journal, path)
    journal.complete = True
    save_journal(journal, path)
    return journal


def _apply_step(step: Step, runner: CommandRunner) -> JournalEntry:
    base = {"node": step.node, "kind": step.kind, "target": step.target, "value": step.value}
    undo: list[str] | None = step.undo
    found = ABSENT
    if step.kind == "file":
        found, undo = _file_undo(step, runner)
        if undo is None:
            return JournalEntry(**base, ran=None, undo=None, found=found)
    elif step.kind in ("mtu", "link-up"):
        link = _link_state(step, runner)
        if step.kind == "mtu":
            found = f"mtu {link['mtu']}"
            if str(link["mtu"]) == step.value:
                return JournalEntry(**base, ran=None, undo=None, found=found)
            undo = [*step.undo[:-1], str(link["mtu"])]
        else:
            flags = link.get("flags", [])
            is_up = isinstance(flags, list) and "UP" in flags
            found = "up" if is_up else "down"
            if is_up:
                return JournalEntry(**base, ran=None, undo=None, found=found)
    elif step.kind == "sysctl":
        read = runner.run(["sysctl", "-n", step.target])
        if not read.ok:
            raise FabricError(
                f"node {step.node}: cannot read {step.target}: {read.error_line} — check sysctl"
            )
        before = read.stdout.strip()
        found = f"{step.target} = {before}"
        if before == step.value:
            return JournalEntry(**base, ran=None, undo=None, found=found)
        undo = ["sysctl", "-w", f"{step.target}={before}"]
    done = runner.run(step.apply)
    if not done.ok:
        if step.kind in ("address", "route") and ALREADY_THERE in done.stderr:
            return JournalEntry(**base, ran=None, undo=None, found="already present, left alone")
        raise FabricError(
            f"node {step.node} ({runner.description}): `{step.shown}` failed: "
            f"{done.error_line} — fix the cause"
        )
    return JournalEntry(**base, ran=step.apply, undo=undo, found=found)


def _file_undo(step: Step, runner: CommandRunner) -> tuple[str, list[str] | None]:
    """What the file was (in words) and the undo that brings it back: removing it when there
    was none, writing the old bytes back when they differ; None when it already holds the
    plan's content."""
    held = _file_content(step, runner)
    if held is None:
        return ABSENT, step.undo
    found = describe_bytes(held)
    if held == (step.content or "").encode():
        return found, None
    undo = write_back_argv(step.target, base64.b64encode(held).decode())
    if len(shlex.join(undo).encode()) > ARGUMENT_MAX_BYTES:
        raise FabricError(
            f"node {step.node}: {step.target} holds {found}, more than a restore can write "
            f"back in one command ({ARGUMENT_MAX_BYTES:,} bytes) — move it aside, then apply "
            "again"
        )
    return found, undo


def _file_content(step: Step, runner: CommandRunner) -> bytes | None:
    """The file's bytes on the node, None when there is none."""
    read = runner.run(read_file_argv(step.target))
    status, _, encoded = read.stdout.partition("\n")
    if read.ok and status == ABSENT:
        return None
    said = read.error_line if not read.ok else f"it answered {read.stdout[:60]!r}"
    if read.ok and status == "present":
        try:
            return base64.b64decode(encoded)
        except binascii.Error as exc:
            said = f"its base64 does not decode ({exc})"
    raise FabricError(
        f"node {step.node} ({runner.description}): cannot read {step.target}: {said} — make "
        "it a readable file (not a folder), then apply again"
    )


def _link_state(step: Step, runner: CommandRunner) -> dict[str, object]:
    shown = runner.run(["ip", "-j", "link", "show", "dev", step.target])
    if not shown.ok:
        raise FabricError(
            f"node {step.node} ({runner.description}) has no interface {step.target}: "
            f"{shown.error_line} — fix the port's netdev in the cluster file, or run "
            "`sparkrig fabric discover`"
        )
    links = json.loads(shown.stdout)
    return dict(links[0])


def restore(path: Path, runner_for: Callable[[ExecutorSpec], CommandRunner]) -> FabricJournal:
    """Undo every journaled change, newest first. Undos that fail stay in the journal and
    the error names them; the journal file goes away only when everything was undone."""
    journal = load_journal(path)
    runners = {node: runner_for(spec) for node, spec in journal.executors.items()}
    failed: list[JournalEntry] = []
    failures: list[str] = []
    for entry in reversed(journal.entries):
        if entry.undo is None:
            continue
        result = runners[entry.node].run(entry.undo)
        if not result.ok:
            failed.insert(0, entry)
            failures.append(f"{entry.node}: `{entry.undo_shown}`: {result.error_line}")
    if failures:
        journal.entries = failed
        save_journal(journal, path)
        raise FabricError(
            f"{len(failures)} undo(s) failed ({'; '.join(failures)}) — fix the cause and run "
            "--restore again; the journal now holds only those"
        )
    path.unlink()
    return journal
