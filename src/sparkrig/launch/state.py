"""The record of a cluster sparkrig started: per process, the node, how it is reached, its pid
and /proc start time. Written after each start, so `down` finds even a half-started cluster."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from pydantic import AwareDatetime, BaseModel, Field

from sparkrig.engines.launch_spec import ProcessSpec
from sparkrig.errors import StateError
from sparkrig.fabric.runner import ExecutorSpec
from sparkrig.json_files import read_model_file, write_atomically
from sparkrig.paths import state_dir

CLUSTER_STATE_VERSION = 1


class StartedRecord(BaseModel):
    process: ProcessSpec
    executor: ExecutorSpec
    pid: int = Field(gt=1, description="never 0, -1 or init: those signal whole groups")
    pid_start_ticks: int = Field(description="/proc/PID/stat field 22; -1 if it died at once")
    log_path: str
    started_at: AwareDatetime

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
    if not path.exists() and not path.is_symlink():
        return None
    return read_model_file(
        path,
        ClusterState,
        what="cluster state file",
        error=StateError,
        fix=f"check that no process it names still runs, then move {path} aside",
    )


def remove_state(cluster: str) -> None:
    state_path(cluster).unlink(missing_ok=True)
