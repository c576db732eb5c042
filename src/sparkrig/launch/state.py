"""The one record of what sparkrig started, for a cluster and for a local server alike: per
process, the node, how it is reached, its pid and /proc start time. Written after each start, so
`down` finds even a half-started launch, and stops only the processes it names."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from pydantic import AwareDatetime, BaseModel, Field

from sparkrig.engines.launch_spec import ProcessSpec
from sparkrig.engines.llamacpp.server import LlamaServerSpec
from sparkrig.errors import StateError
from sparkrig.fabric.runner import ExecutorSpec
from sparkrig.json_files import read_model_file, write_atomically
from sparkrig.launch.boot_phases import BootPhase, slowest_phase
from sparkrig.outside_numbers import int_or_none
from sparkrig.paths import state_dir

LAUNCH_STATE_VERSION = 2  # 1: clusters only; local servers had a record of their own


class StartedRecord(BaseModel):
    process: ProcessSpec
    executor: ExecutorSpec
    pid: int = Field(gt=1, description="never 0, -1 or init: those signal whole groups")
    pid_start_ticks: int = Field(
        description="start time of the pid in clock ticks since boot (/proc/PID/stat field 22), "
        "-1 if it died at once; a reused pid has another, so `down` never signals a stranger"
    )
    log_path: str
    started_at: AwareDatetime
    session: int | None = Field(
        default=None,
        gt=1,
        description="the session (setsid) it was started in, which its children share: `down` "
        "stops what is left of it (None in records from before sparkrig kept it)",
    )
    session_start_ticks: int | None = Field(
        default=None, description="the session leader's start time, so a reused number is not ours"
    )

    def uptime_s(self) -> float:
        return (datetime.now(UTC) - self.started_at).total_seconds()


class LaunchState(BaseModel):
    schema_version: int = LAUNCH_STATE_VERSION
    cluster: str = Field(description="the cluster's name, or local-PORT for a local server")
    api_url: str
    model_name: str
    stall_window_s: float
    started: list[StartedRecord] = Field(default_factory=list, description="in start order")
    planned: list[str] = Field(default_factory=list, description="every process key of the plan")
    server: LlamaServerSpec | None = Field(
        default=None, description="a local launch: the llama-server it runs (None: a cluster)"
    )
    engine_build: str | None = Field(
        default=None, description="which build of the engine runs (variant, repack on or off)"
    )
    engine: str | None = Field(
        default=None, description="the engine kind (vllm, llamacpp); None in older records"
    )
    boot_phases: dict[str, list[BootPhase]] = Field(
        default_factory=dict, description="per NODE/PROCESS: its boot phases, read once ready"
    )
    kv_pool_tokens: int | None = Field(
        default=None, description="the KV pool the engine reported at this boot (the head's)"
    )


def local_dir() -> Path:
    return state_dir() / "local"


def state_path(state: LaunchState | str) -> Path:
    if isinstance(state, LaunchState) and state.server is not None:
        return local_dir() / f"{state.cluster}.json"
    name = state if isinstance(state, str) else state.cluster
    return state_dir() / "clusters" / f"{name}.json"


def save_state(state: LaunchState) -> None:
    write_atomically(state, state_path(state))


def _read(path: Path) -> LaunchState:
    fix = f"check that no process it names still runs, then move {path} aside"
    if (pid := _legacy_pid(path)) is not None:
        raise StateError(
            f"{path} records a local server (pid {pid}) started by an older sparkrig — stop it "
            f"with that version's `sparkrig down --apply`, or check that pid {pid} no longer "
            "runs and move the file aside"
        )
    return read_model_file(path, LaunchState, what="launch state file", error=StateError, fix=fix)


def load_state(cluster: str) -> LaunchState | None:
    path = state_path(cluster)
    if not path.exists() and not path.is_symlink():
        return None
    return _read(path)


def load_local_states() -> list[LaunchState]:
    folder = local_dir()
    return [_read(path) for path in sorted(folder.glob("*.json"))] if folder.is_dir() else []


def load_local_state(name: str) -> LaunchState | None:
    path = local_dir() / f"{name}.json"
    return _read(path) if path.exists() or path.is_symlink() else None


def remove_state(state: LaunchState) -> None:
    state_path(state).unlink(missing_ok=True)


def process_start_ticks(pid: int) -> int | None:
    """Start time of `pid` on this machine, or None when no such process runs (or a zombie)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (field 2) may contain spaces and parentheses: split after the last ')'
    fields = stat[stat.rindex(")") + 2 :].split()
    return None if fields[0] in {"Z", "X"} else int_or_none(fields[19], minimum=0)


def is_running_here(record: StartedRecord) -> bool:
    """True only if the recorded pid is alive on this machine and is the very process started."""
    return process_start_ticks(record.pid) == record.pid_start_ticks


def recorded_engine_build(base_url: str) -> str | None:
    """The engine build behind `base_url` when sparkrig started it here; None otherwise."""
    try:
        states = load_local_states()
    except StateError:
        return None
    wanted = base_url.rstrip("/")
    for state in states:
        if state.api_url == wanted and all(is_running_here(r) for r in state.started):
            return state.engine_build
    return None


class BootRecord(BaseModel):
    """How the server a receipt measured came up, when sparkrig started it: every rank's boot
    phases, the slowest of them, and the KV pool of that boot (a per-boot figure)."""

    cluster: str = Field(description="the launch: the cluster's name, or local-PORT")
    boot_phases: dict[str, list[BootPhase]] = Field(
        default_factory=dict,
        description="per rank (NODE/PROCESS): its boot phases in order, each with its name, "
        "seconds since the log's first stamped line, seconds it took, and the log line",
    )
    slowest: str | None = Field(
        default=None, description="the slowest rank and phase, e.g. 'b/vllm weights loaded 342 s'"
    )
    kv_pool_tokens: int | None = Field(
        default=None,
        description="tokens of KV cache the engine's boot log reported (the head rank's); "
        "unset where the log said none",
    )


def recorded_boot(base_url: str) -> BootRecord | None:
    """The boot of the launch serving `base_url`, from this machine's launch states (a local
    server or a cluster started from here); None when sparkrig did not start it or recorded no
    phase. A state that cannot be read gives None: a receipt does not fail for it."""
    wanted = base_url.rstrip("/")
    try:
        clusters = state_dir() / "clusters"
        states = [
            *load_local_states(),
            *(_read(path) for path in sorted(clusters.glob("*.json")) if clusters.is_dir()),
        ]
    except (StateError, OSError):
        return None
    for state in states:
        if state.api_url != wanted or not (state.boot_phases or state.kv_pool_tokens):
            continue
        found = slowest_phase(state.boot_phases)
        slowest = (
            f"{found[0]} {found[1].name} {found[1].took_s:.1f} s" if found is not None else None
        )
        return BootRecord(
            cluster=state.cluster,
            boot_phases=state.boot_phases,
            slowest=slowest,
            kv_pool_tokens=state.kv_pool_tokens,
        )
    return None


def _legacy_pid(path: Path) -> object:
    """The pid of a local server's record as sparkrig wrote it before local serving became a
    one-node launch (a JSON object with a pid of its own, no cluster); None for anything else."""
    try:
        raw = json.loads(path.read_text())
    except (OSError, ValueError, RecursionError):
        return None
    return raw.get("pid") if isinstance(raw, dict) and "cluster" not in raw else None
