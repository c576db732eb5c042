"""What doctor collects and what it reports. Versioned pydantic models, so `--json` and the
fixtures never hand-build dicts."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from sparkrig.frozen_model import FrozenModel

Severity = Literal["error", "warning", "info"]
SEVERITY_ORDER: dict[str, int] = {"error": 0, "warning": 1, "info": 2}


class ToolOutput(FrozenModel):
    """One command's raw result on one node, exactly as the tool printed it."""

    command: str = Field(description="the command as run, shell-quoted")
    returncode: int = Field(description="exit status; -1 when it could not run")
    stdout: str = Field(default="", description="standard output, verbatim")
    stderr: str = Field(default="", description="standard error, verbatim")
    skipped: str | None = Field(
        default=None, description="why it did not run (tool missing: how to install it)"
    )
    started_at: float | None = Field(
        default=None, description="this machine's clock when the command was sent (clock probe)"
    )
    finished_at: float | None = Field(
        default=None, description="this machine's clock when the answer came back (clock probe)"
    )


class NodeCapture(FrozenModel):
    """Everything doctor read from one node, once."""

    node: str
    reached_by: str = Field(description="how the node was reached: local, netns NAME, ssh HOST")
    unreachable: str | None = Field(
        default=None, description="why nothing could be run on the node; outputs is then empty"
    )
    outputs: dict[str, ToolOutput] = Field(default_factory=dict, description="by probe name")

    def text(self, probe: str) -> str | None:
        """The probe's stdout when it ran and answered, else None."""
        output = self.outputs.get(probe)
        if output is None or output.skipped is not None:
            return None
        return output.stdout


class DoctorFinding(FrozenModel):
    """One problem doctor saw on a node or across nodes: what, why, where documented, the fix."""

    check: str = Field(description="the check's registered name")
    severity: Severity
    node: str = Field(description="the node it is about, or `cluster` for a comparison")
    seen: str = Field(description="what was observed, quoting the value")
    why: str = Field(description="why it matters")
    source: str = Field(description="where the pitfall is documented (docs/field-notes.md §)")
    fix: str = Field(description="the exact command or setting; doctor prints it, never runs it")


class Skipped(FrozenModel):
    """A check that could not run on a node, and how to make it run."""

    node: str
    checks: list[str]
    reason: str = Field(description="`what happened — how to fix it`")


class DoctorReport(FrozenModel):
    version: Literal[1] = 1
    cluster: str | None = Field(default=None, description="cluster name, None on one machine")
    nodes: list[str]
    findings: list[DoctorFinding]
    skipped: list[Skipped]
    checks_run: int = Field(description="check × node evaluations that ran")

    @property
    def errors(self) -> list[DoctorFinding]:
        return [f for f in self.findings if f.severity == "error"]
