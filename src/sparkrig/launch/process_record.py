"""The record of a process sparkrig started: enough to find it again and to stop only it."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from datetime import UTC, datetime
from pathlib import Path

from pydantic import AwareDatetime, BaseModel, Field

from sparkrig.errors import StateError
from sparkrig.json_files import read_model_file, write_atomically
from sparkrig.paths import state_dir

RECORD_SCHEMA_VERSION = 1


class InstanceRecord(BaseModel):
    """One running engine instance, written when `up` starts it and removed by `down`."""

    schema_version: int = RECORD_SCHEMA_VERSION
    name: str
    engine: str = "llama.cpp"
    pid: int = Field(gt=1, description="never 0, -1 or init: those signal whole groups")
    pid_start_ticks: int = Field(
        description="start time of the pid in clock ticks since boot (/proc/PID/stat field 22); "
        "a reused pid has another, so `down` never signals a stranger"
    )
    argv: list[str]
    host: str
    port: int = Field(ge=1, le=65535)
    model: str
    alias: str
    parallel_slots: int
    speculative: str | None = None
    log_path: Path
    started_at: AwareDatetime
    engine_build: str | None = Field(
        default=None, description="which build of the engine runs (variant, repack on or off)"
    )

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def uptime_s(self) -> float:
        return (datetime.now(UTC) - self.started_at).total_seconds()


def records_dir() -> Path:
    return state_dir() / "local"


def record_path(name: str) -> Path:
    return records_dir() / f"{name}.json"


def save_record(record: InstanceRecord) -> Path:
    return write_atomically(record, record_path(record.name))


def load_records() -> list[InstanceRecord]:
    folder = records_dir()
    if not folder.is_dir():
        return []
    records = []
    for path in sorted(folder.glob("*.json")):
        fix = f"check that no process it names still runs, then move {path} aside"
        record = read_model_file(
            path, InstanceRecord, what="instance record", error=StateError, fix=fix
        )
        records.append(record)
    return records


def recorded_engine_build(base_url: str) -> str | None:
    """The engine build behind `base_url` when sparkrig started it here; None otherwise."""
    try:
        records = load_records()
    except StateError:
        return None
    wanted = base_url.rstrip("/")
    for record in records:
        if record.base_url == wanted and is_running(record):
            return record.engine_build
    return None


def remove_record(name: str) -> None:
    record_path(name).unlink(missing_ok=True)


def process_start_ticks(pid: int) -> int | None:
    """Start time of `pid` from /proc, or None when no such process exists (or is a zombie)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (field 2) may contain spaces and parentheses: split after the last ')'
    fields = stat[stat.rindex(")") + 2 :].split()
    if fields[0] == "Z":
        return None
    return int(fields[19])


def is_running(record: InstanceRecord) -> bool:
    """True only if the recorded pid is alive and is the very process sparkrig started."""
    return process_start_ticks(record.pid) == record.pid_start_ticks


def stop_process(record: InstanceRecord, grace_s: float) -> str:
    """Stop the recorded process (SIGTERM, then SIGKILL after `grace_s`). Returns what happened."""
    if not is_running(record):
        return "already stopped"
    os.kill(record.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if not is_running(record):
            return "stopped"
        _reap(record.pid)
        time.sleep(0.05)
    if is_running(record):
        os.kill(record.pid, signal.SIGKILL)
        _reap(record.pid)
        return "killed after the grace period"
    return "stopped"


def _reap(pid: int) -> None:
    """Collect the exit status if the process is our own child, so it does not linger as zombie."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
