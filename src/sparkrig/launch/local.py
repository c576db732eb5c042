"""Serve a GGUF with the embedded llama-server on this machine: plan, start, wait ready."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path

import aiohttp
from pydantic import BaseModel

from sparkrig import defaults
from sparkrig.engines.llamacpp.server import LlamaServerSpec, llama_server_argv
from sparkrig.errors import LaunchError, PortInUseError
from sparkrig.launch.process_record import (
    InstanceRecord,
    is_running,
    load_records,
    process_start_ticks,
    records_dir,
    remove_record,
    save_record,
    stop_process,
)
from sparkrig.launch.readiness import CompletionProbe
from sparkrig.local_process import free_port, log_tail
from sparkrig.process_exit import from_returncode

_LOG_TAIL_LINES = 4
_BIND_FAILURE_MARKERS = ("couldn't bind", "address already in use", "failed to bind")


class LocalPlan(BaseModel):
    """What `up --local` will do, printed before anything starts."""

    name: str
    server: LlamaServerSpec
    log_path: Path
    port_was_chosen: bool
    engine_build: str | None = None

    @property
    def argv(self) -> list[str]:
        return llama_server_argv(self.server)


def check_port_free(host: str, port: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError as exc:
            raise PortInUseError(
                f"port {port} on {host} is already in use — pick another with --port, "
                "or omit --port to let sparkrig choose a free one"
            ) from exc


def plan_local(
    server: LlamaServerSpec, *, port_was_chosen: bool, engine_build: str | None = None
) -> LocalPlan:
    name = f"local-{server.port}"
    taken = {record.name for record in load_records()}
    if name in taken:
        raise PortInUseError(
            f"an instance named {name} is already recorded — stop it with `sparkrig down "
            f"--name {name} --apply`, or choose another --port"
        )
    if not port_was_chosen:
        check_port_free(server.host, server.port)
    return LocalPlan(
        name=name,
        server=server,
        log_path=records_dir() / f"{name}.log",
        port_was_chosen=port_was_chosen,
        engine_build=engine_build,
    )


async def start_local(
    plan: LocalPlan, ready_probe: CompletionProbe, timeout_s: float = defaults.READY_TIMEOUT_S
) -> InstanceRecord:
    """Start llama-server, record it at once, and return when it is ready by liveness.

    Ready means `/health` answers 200 and one real completion comes back. If it never gets
    there, the process is stopped, its record removed, and the log tail is in the error.
    """
    plan.log_path.parent.mkdir(parents=True, exist_ok=True)
    with plan.log_path.open("w") as log:
        # own session: the server outlives this CLI call and never gets our terminal's signals
        proc = subprocess.Popen(  # noqa: ASYNC220 - returns at once; the server runs detached
            plan.argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    ticks = process_start_ticks(proc.pid)
    record = InstanceRecord(
        name=plan.name,
        pid=proc.pid,
        pid_start_ticks=ticks if ticks is not None else -1,
        argv=plan.argv,
        host=plan.server.host,
        port=plan.server.port,
        model=str(plan.server.model),
        alias=plan.server.alias,
        parallel_slots=plan.server.parallel_slots,
        speculative=plan.server.speculative.spec_type if plan.server.speculative else None,
        log_path=plan.log_path,
        started_at=datetime.now(UTC),
        engine_build=plan.engine_build,
    )
    save_record(record)
    try:
        await _wait_healthy(record, proc, timeout_s)
        await ready_probe(record.base_url, record.alias)
    except BaseException:
        stop_process(record, defaults.STOP_GRACE_S)
        proc.wait()
        remove_record(record.name)
        raise
    return record


async def _wait_healthy(
    record: InstanceRecord, proc: subprocess.Popen[bytes], timeout_s: float
) -> None:
    deadline = time.monotonic() + timeout_s
    timeout = aiohttp.ClientTimeout(total=2.0)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                tail = log_tail(record.log_path, _LOG_TAIL_LINES)
                if any(marker in tail.lower() for marker in _BIND_FAILURE_MARKERS):
                    raise PortInUseError(
                        f"llama-server could not bind port {record.port}: {tail} — "
                        "pick another with --port"
                    )
                raise LaunchError(
                    died_before_ready("llama-server", proc.returncode, tail, record.log_path)
                )
            try:
                async with session.get(f"{record.base_url}/health") as response:
                    if response.status == 200:
                        return
            except (aiohttp.ClientError, TimeoutError):
                pass  # not listening yet, or still loading the model
            await asyncio.sleep(defaults.READY_POLL_INTERVAL_S)
    tail = log_tail(record.log_path, _LOG_TAIL_LINES)
    raise LaunchError(
        f"llama-server did not answer /health within {timeout_s:.0f}s: {tail}"
        " — a large model may need a longer --ready-timeout"
    )


def died_before_ready(name: str, returncode: int, tail: str, log_path: Path) -> str:
    """`llama-server killed by SIGILL (illegal instruction: …) before it was ready: … — fix`."""
    ended = from_returncode(returncode)
    fix = ended.fix() or "read the log for the cause"
    return f"{name} {ended.describe()} before it was ready: {tail} — {fix} (log: {log_path})"


def stop_instances(records: list[InstanceRecord]) -> list[tuple[InstanceRecord, str]]:
    """Stop each recorded instance that is still the process sparkrig started; forget all."""
    outcomes = []
    for record in records:
        outcomes.append((record, stop_process(record, defaults.STOP_GRACE_S)))
        remove_record(record.name)
    return outcomes


__all__ = [
    "InstanceRecord",
    "LocalPlan",
    "check_port_free",
    "free_port",
    "is_running",
    "log_tail",
    "plan_local",
    "start_local",
    "stop_instances",
]
