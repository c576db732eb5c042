"""What the fabric's host actions need from an executor: run one command on one node.

Defined here, implemented in `sparkrig.launch.executors` (local, netns, ssh) and injected by
the CLI, so the fabric stage never imports the launch stage.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict

from sparkrig.frozen_model import FrozenModel
from sparkrig.process_exit import from_returncode


class CommandResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    argv: list[str]
    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    @property
    def error_line(self) -> str:
        text = (self.stderr or self.stdout).strip()
        return text.splitlines()[-1] if text else from_returncode(self.returncode).describe()


class CommandRunner(Protocol):
    @property
    def description(self) -> str:
        """How the node is reached, for messages and the journal: `netns sr-1-a`, `local`."""
        ...

    def run(self, argv: Sequence[str], *, timeout: float | None = None) -> CommandResult:
        """Run argv on the node; never raises for a non-zero exit, only when it cannot run."""
        ...


class ExecutorSpec(FrozenModel):
    """How a node is reached; the journal keeps it so a restore reaches the node the same way.
    `sparkrig.launch.executors.executor_for` turns it into a runner."""

    kind: Literal["local", "netns", "ssh"]
    target: str | None = None
    """namespace name (netns) or ssh destination (ssh)"""
    connect_timeout_s: float | None = None
    """ssh ConnectTimeout (default: `defaults.SSH_CONNECT_TIMEOUT_S`)"""
    ssh_config: str | None = None
    """an ssh_config file passed as `ssh -F`"""
    python: str | None = None
    """the node's Python with sparkrig (`python` of the cluster file's [executor] table)"""
