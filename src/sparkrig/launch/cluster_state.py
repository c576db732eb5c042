"""The record of a cluster sparkrig started: per process, the node, how it is reached, its pid
and /proc start time. Written after each start, so `down` finds even a half-started cluster."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, Field

from sparkrig.engines.launch_spec import ProcessSpec
from sparkrig.errors import StateError
from sparkrig.fabric.runner import ExecutorSpec
from sparkrig.json_files import write_atomically
from sparkrig.paths import state_dir

CLUSTER_STATE_VERSION = 1


class StartedRecord(BaseModel):
    process: ProcessSpec
    executor: ExecutorSpec
    pid: int
    pid_start_ticks: int = Field(description="/proc/PID/stat field 22; -1 if it died at once")
    log_path: str
    started_at: datetime

    def uptime_s(self) -> float:
        return (datetime.now(UTC) - self.started_at).total_seconds()


class ClusterState(BaseModel):
    schema_version: int = CLUSTER_STATE_VERSION
    cluster: str
    api_url: str
    model_name: str
    stall_window_s: float
    started: list[StartedRecord] = Field(default_factory=list, description="in start order")
    planned: list[str] = Field(default_factory=list, description="every process key of the plan")


def state_path(cluster: str) -> Path:
    return state_dir() / "clusters" / f"{cluster}.json"


def save_state(state: ClusterState) -> None:
    write_atomically(state, state_path(state.cluster))


def load_state(cluster: str) -> ClusterState | None:
    path = state_path(cluster)
    if not path.exists():
        return None
    try:
        return ClusterState.model_validate_json(path.read_text())
    except ValueError as exc:
        raise StateError(
            f"state file {path} is unreadable ({exc.__class__.__name__}) — check that no "
            "process it names still runs, then delete the file"
        ) from exc


def remove_state(cluster: str) -> None:
    state_path(cluster).unlink(missing_ok=True)
