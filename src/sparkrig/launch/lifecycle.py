"""Bring a cluster up, watch it, bring it down: the I/O shell around the launch plan.

Commands reach nodes through their executors (run in threads, all nodes at once); the head's
API is probed over HTTP from here. Decisions (phases, stalls, ready) are the pure functions of
`sparkrig.launch.readiness`.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from datetime import UTC, datetime

import aiohttp
from pydantic import BaseModel, Field

from sparkrig import defaults
from sparkrig.engines.launch_spec import ProcessSpec
from sparkrig.errors import (
    EndpointError,
    EngineNotFoundError,
    ExecutorError,
    LaunchError,
    PortInUseError,
    SparkrigError,
)
from sparkrig.fabric.runner import CommandResult, CommandRunner
from sparkrig.launch.api_reach import api_cut_off
from sparkrig.launch.boot_phases import BootPhase
from sparkrig.launch.cache_parity import empty_caches, parity_warnings, survey_caches
from sparkrig.launch.cluster_plan import LaunchPlan
from sparkrig.launch.container_checks import (
    check_containers,
    container_logs,
    inspect_container,
    remove_container,
)
from sparkrig.launch.executors import executor_for
from sparkrig.launch.forensics import hits_sentence, read_forensics, record_boot
from sparkrig.launch.log_signatures import SignatureHit
from sparkrig.launch.model_identity import check_model_copies
from sparkrig.launch.node_commands import (
    ProcessObservation,
    observe_script,
    parse_observation,
    parse_started,
    port_in_use_script,
    start_script,
    stop_script,
    which_script,
)
from sparkrig.launch.quiet_ranks import QuietRank, quiet_verdict, read_gpus
from sparkrig.launch.readiness import (
    CompletionProbe,
    Phase,
    Progress,
    Sighting,
    assess_startup,
    cluster_readiness,
    phase_of,
    track_progress,
)
from sparkrig.launch.rendezvous import rendezvous_cut_off
from sparkrig.launch.state import LaunchState, StartedRecord, remove_state, save_state

Say = Callable[[str], None]


async def _run(
    runner: CommandRunner, argv: list[str], limit_s: float | None = None
) -> CommandResult:
    return await asyncio.to_thread(runner.run, argv, timeout=limit_s)


def runners_for(plan: LaunchPlan) -> dict[str, CommandRunner]:
    return {access.node: executor_for(access.executor) for access in plan.access}


async def preflight(plan: LaunchPlan, runners: dict[str, CommandRunner]) -> None:
    """Before anything starts: every node answers, has its engine binary, and its ports free."""

    async def check(node: str) -> None:
        runner = runners[node]
        processes = [p for p in plan.processes if p.node == node]
        for binary in dict.fromkeys(p.argv[0] for p in processes):
            found = await _run(runner, which_script(binary))
            if not found.ok or found.stdout.strip() in {"", "missing"}:
                raise EngineNotFoundError(
                    f"{binary} is not installed on node {node} ({runner.description}) — install "
                    "it there, or point engine.binary / engine.rpc_binary at it"
                )
        for port in dict.fromkeys(p.port for p in processes if p.port is not None):
            used = await _run(runner, port_in_use_script(port))
            if used.stdout.strip() not in {"", "0"}:
                raise PortInUseError(
                    f"port {port} on node {node} ({runner.description}) is already in use — "
                    "stop what listens there, or change engine.port / engine.rpc_port (--port "
                    "for up --local)"
                )

    await asyncio.gather(*(check(node) for node in runners))


async def _health(session: aiohttp.ClientSession, api_url: str) -> tuple[bool, str | None]:
    """Whether /health said 200, and why no connection got through when none did."""
    try:
        async with session.get(f"{api_url}/health") as response:
            return response.status == 200, None
    except aiohttp.ClientConnectorError as exc:  # asyncio words it "Connect call failed (…)"
        errno = exc.os_error.errno
        return False, os.strerror(errno) if errno and errno > 0 else str(exc.os_error)
    except aiohttp.ServerTimeoutError:  # raised while connecting (a read timeout is plain)
        return False, "timed out connecting"
    except (aiohttp.ClientError, TimeoutError):
        return False, None


async def observe_process(
    record: StartedRecord, runner: CommandRunner, session: aiohttp.ClientSession, api_url: str
) -> Sighting:
    process = record.process
    result = await _run(
        runner,
        observe_script(
            record.pid,
            record.pid_start_ticks,
            record.log_path,
            process.port,
            defaults.LAUNCH_LOG_TAIL_LINES,
        ),
    )
    seen = parse_observation(result.stdout, record.pid_start_ticks, process.port)
    if process.ready_when != "health" or not seen.alive:
        return Sighting(observation=seen)
    healthy, api_error = await _health(session, api_url)
    return Sighting(observation=seen, healthy=healthy, api_error=api_error)


def _session() -> aiohttp.ClientSession:
    return aiohttp.ClientSession(
        timeout=aiohttp.ClientTimeout(total=defaults.LAUNCH_HTTP_PROBE_TIMEOUT_S)
    )


async def bring_up(
    plan: LaunchPlan,
    runners: dict[str, CommandRunner],
    probe: CompletionProbe,
    say: Say,
    *,
    cold: bool = False,
) -> LaunchState:
    """Start every process in plan order, each after the ones before it are ready (an API
    process only has to stay alive until the end); then the head's health, one completion, and
    every process still alive. On any failure, stop what was started and forget it."""
    await preflight(plan, runners)
    if plan.model_path is not None:
        await check_model_copies(
            plan.model_path, plan.weight_nodes, runners, tuple(plan.model_folder_files)
        )
    await check_containers(plan.processes, runners, plan.cluster, say)
    if cold:  # every node's JIT caches emptied together, so the ranks compile in step
        for line in await empty_caches(plan.processes, runners):
            say(f"cold: {line}")
    for warning in parity_warnings(await survey_caches(plan.processes, runners)):
        say(f"warning: {warning}")
    state = LaunchState(
        cluster=plan.cluster,
        api_url=plan.api_url,
        model_name=plan.model_name,
        stall_window_s=plan.stall_window_s,
        planned=[p.key for p in plan.processes],
        server=plan.server,
        engine_build=plan.engine_build,
        engine=plan.engine,
    )
    save_state(state)
    deadline = time.monotonic() + plan.ready_timeout_s
    try:
        async with _session() as session:
            for process in plan.processes:
                await _wait(plan, state, runners, session, deadline, api_later=True)
                access = plan.access_of(process.node)
                log_path = plan.log_path(process)
                env = {var.name: var.value for var in process.env}
                result = await _run(
                    runners[process.node], start_script(process.argv, env, log_path)
                )
                if not result.ok:
                    raise LaunchError(
                        f"cannot start {process.name} on node {process.node}: "
                        f"{result.error_line} — check that {access.log_dir} is writable there"
                    )
                started = parse_started(result.stdout)
                state.started.append(
                    StartedRecord(
                        process=process,
                        executor=access.executor,
                        pid=started.pid,
                        pid_start_ticks=started.start_ticks,
                        log_path=log_path,
                        started_at=datetime.now(UTC),
                        session=started.session,
                        session_start_ticks=started.session_ticks,
                    )
                )
                save_state(state)
                say(f"started {process.name} on {process.node} (pid {started.pid})")
            await _wait(plan, state, runners, session, deadline, api_later=False)
            say(f"{plan.head}: /health OK; asking for one completion")
            await probe(plan.api_url, plan.model_name)
            await _wait(plan, state, runners, session, deadline, api_later=False)
        await record_boot(state, say)
    except BaseException:
        say("stopping what was started")
        await bring_down(state, runners)
        raise
    return state


_EXIT_STATUS_GRACE_S = 0.5


def _died_message(
    process: ProcessSpec,
    reason: str,
    seen: ProcessObservation,
    record: StartedRecord,
    *,
    one_node: bool = False,
) -> str:
    """`node b: ggml-rpc-server killed by SIGILL (…) before the cluster was ready; … — fix`;
    for a local server `llama-server killed by SIGILL (…) before it was ready: … — fix`."""
    tail = " | ".join(seen.tail) or "(empty log)"
    ended = seen.ended if reason == "exited" else None
    how = ended.describe() if ended is not None else reason
    fix = (ended.fix() if ended is not None else None) or "fix the cause"
    if one_node:
        return f"{process.name} {how} before it was ready: {tail} — {fix} (log: {record.log_path})"
    return (
        f"node {process.node}: {process.name} {how} before the cluster was ready; last log "
        f"lines: {tail} — {fix}, then `sparkrig up` again (full log: {record.log_path} on that "
        "node)"
    )


async def _wait(
    plan: LaunchPlan,
    state: LaunchState,
    runners: dict[str, CommandRunner],
    session: aiohttp.ClientSession,
    deadline: float,
    *,
    api_later: bool,
) -> None:
    progress: dict[str, Progress] = {}
    while True:
        sightings = await asyncio.gather(
            *(
                observe_process(r, runners[r.process.node], session, plan.api_url)
                for r in state.started
            )
        )
        now = time.monotonic()
        watched = []
        for record, sighting in zip(state.started, sightings, strict=True):
            phase = phase_of(record.process, sighting)
            key = record.process.key
            progress[key] = track_progress(progress.get(key), sighting, phase, now)
            watched.append((record.process, phase, progress[key]))
        readiness = assess_startup(watched, now, plan.stall_window_s, api_later=api_later)
        if readiness.state == "ready":
            return
        if readiness.state == "failed" and readiness.process is not None:
            index = [r.process.key for r in state.started].index(readiness.process.key)
            record = state.started[index]
            if readiness.reason != "exited":  # stalled: a head this machine cannot connect to?
                cut_off = api_cut_off(plan, [(record.process, sightings[index])])
                cut_off = cut_off or await rendezvous_cut_off(plan, runners)
                if cut_off is not None:
                    raise LaunchError(cut_off)
            seen = sightings[index].observation
            if readiness.reason == "exited" and seen.exit_status is None:
                await asyncio.sleep(_EXIT_STATUS_GRACE_S)  # the wrapper writes $? just after
                seen = (
                    await observe_process(record, runners[record.process.node], session, "")
                ).observation
            one_node = plan.server is not None
            message = _died_message(
                readiness.process, readiness.reason, seen, record, one_node=one_node
            )
            message += await _container_sentence(record, runners[record.process.node])
            raise LaunchError(message + hits_sentence(await read_forensics(state)))
        if now > deadline:
            cut_off = api_cut_off(
                plan, [(r.process, s) for r, s in zip(state.started, sightings, strict=True)]
            )
            cut_off = cut_off or await rendezvous_cut_off(plan, runners)
            if cut_off is not None:
                raise LaunchError(cut_off)
            raise LaunchError(
                f"not ready after {plan.ready_timeout_s:g} s although every node advanced; "
                f"waiting on {', '.join(readiness.waiting_on)} — raise "
                + ("--ready-timeout" if plan.server is not None else "engine.ready_timeout_s")
            )
        await asyncio.sleep(defaults.LAUNCH_POLL_INTERVAL_S)


async def _container_sentence(record: StartedRecord, runner: CommandRunner) -> str:
    """What the runtime says about a contained process that died: an OOM kill is named."""
    run = record.process.container
    if run is None:
        return ""
    found = await inspect_container(run, runner)
    if found is None:
        return f"; container {run.name}: not found"
    if found.oom_killed:
        return (
            f"; container {run.name}: {found.describe()} — the kernel's OOM killer ended it: "
            "lower gpu_memory_utilization or max_model_len, or free memory on that node"
        )
    return f"; container {run.name}: {found.describe()}"


class ProcessRow(BaseModel):
    node: str
    role: str = "?"
    name: str
    phase: Phase
    pid: int | None = None
    uptime_s: float | None = None
    last_line: str = ""
    container: str | None = Field(
        default=None, description="the runtime's inspect: state, exit code, OOMKilled, restarts"
    )


class LaunchStatus(BaseModel):
    cluster: str
    api_url: str
    ready: bool
    summary: str
    rows: list[ProcessRow]
    signatures: list[SignatureHit] = Field(default_factory=list)
    kernel_notes: list[str] = Field(default_factory=list, description="kernel logs not read")
    boot: dict[str, list[BootPhase]] = Field(default_factory=dict)
    kv_pool_tokens: int | None = None
    quiet: list[QuietRank] = Field(
        default_factory=list, description="live ranks whose log is quiet past the stall window"
    )


async def _quiet_ranks(state: LaunchState, sightings: list[Sighting | None]) -> list[QuietRank]:
    """Each live rank quiet for longer than the stall window, judged by its node's GPU."""
    quiet: list[tuple[StartedRecord, int]] = []
    for record, seen in zip(state.started, sightings, strict=True):
        if seen is None or not seen.observation.alive:
            continue
        quiet_s = seen.observation.log_quiet_s
        if quiet_s is not None and quiet_s > state.stall_window_s:
            quiet.append((record, quiet_s))
    if not quiet:
        return []
    gpus = await read_gpus({record.process.node: record.executor for record, _ in quiet})
    return [
        quiet_verdict(r.process.key, r.process.node, r.pid, quiet_s, gpus[r.process.node])
        for r, quiet_s in quiet
    ]


async def launch_status(state: LaunchState, probe: CompletionProbe) -> LaunchStatus:
    async with _session() as session:
        sightings = await asyncio.gather(
            *(_observe_or_none(r, session, state.api_url) for r in state.started)
        )
    rows = []
    phases: dict[str, Phase] = {}
    containers = await asyncio.gather(*(_inspect_or_none(r) for r in state.started))
    for record, sighting, contained in zip(state.started, sightings, containers, strict=True):
        phase = Phase.UNREACHABLE if sighting is None else phase_of(record.process, sighting)
        last = "(node unreachable)" if sighting is None else sighting.observation.last_line
        phases[record.process.key] = phase
        rows.append(
            ProcessRow(
                node=record.process.node,
                role=record.process.role,
                name=record.process.name,
                phase=phase,
                pid=record.pid,
                uptime_s=record.uptime_s(),
                last_line=last,
                container=contained,
            )
        )
    started = {r.process.key for r in state.started}
    for key in state.planned:
        if key not in started:
            node, _, name = key.partition("/")
            phases[key] = Phase.NOT_STARTED
            rows.append(ProcessRow(node=node, name=name, phase=Phase.NOT_STARTED))
    forensics = await read_forensics(state)
    # a rank's log that says it is gone: the head may still answer /health while a request
    # hangs, so the probe would only wait out its bound
    ended = next((hit for hit in forensics.hits if hit.ends_serving), None)
    completion_ok = None
    all_up = cluster_readiness(phases, True)[0]
    if all_up and ended is None:
        try:
            await asyncio.wait_for(
                probe(state.api_url, state.model_name), defaults.STATUS_COMPLETION_TIMEOUT_S
            )
            completion_ok = True
        except (LaunchError, EndpointError, TimeoutError):
            completion_ok = False
    ready, summary = cluster_readiness(phases, completion_ok)
    if all_up and ended is not None:
        summary = f"not ready: {ended.where} logged {ended.signature} ({ended.line[:160]})"
    return LaunchStatus(
        cluster=state.cluster,
        api_url=state.api_url,
        ready=ready,
        summary=summary,
        rows=rows,
        signatures=forensics.hits,
        kernel_notes=[k.note for k in forensics.kernels if not k.readable],
        boot=state.boot_phases or forensics.boot(),
        kv_pool_tokens=state.kv_pool_tokens,
        quiet=await _quiet_ranks(state, sightings),
    )


async def _inspect_or_none(record: StartedRecord) -> str | None:
    run = record.process.container
    if run is None:
        return None
    try:
        found = await inspect_container(run, executor_for(record.executor))
    except ExecutorError:
        return "(node unreachable)"
    return found.describe() if found is not None else "no such container"


async def _observe_or_none(
    record: StartedRecord, session: aiohttp.ClientSession, api_url: str
) -> Sighting | None:
    try:
        return await observe_process(record, executor_for(record.executor), session, api_url)
    except ExecutorError:
        return None


async def bring_down(
    state: LaunchState, runners: dict[str, CommandRunner] | None = None
) -> list[tuple[StartedRecord, str]]:
    """Stop every recorded process, the head first (it holds the workers' connections), and
    forget the cluster once all are stopped. A node that cannot be reached keeps its record."""

    async def stop(record: StartedRecord) -> tuple[StartedRecord, str]:
        runner = (runners or {}).get(record.process.node) or executor_for(record.executor)
        grace = defaults.STOP_GRACE_S
        try:
            result = await _run(
                runner,
                stop_script(
                    record.pid,
                    record.pid_start_ticks,
                    grace,
                    record.session,
                    record.session_start_ticks,
                ),
                grace + 15,
            )
        except ExecutorError as exc:
            return record, f"not reached: {exc}"
        outcome = (result.stdout.strip().splitlines() or ["stopped"])[-1]
        if record.process.container is not None:
            removed = await remove_container(record.process.container, runner, state.cluster)
            outcome = f"{outcome}; {removed}"
        return record, outcome

    # the head first (started last), then every worker at once: a worker whose head is gone
    # often sits in a collective that ignores SIGTERM until its grace ends
    ordered = list(reversed(state.started))
    outcomes = [await stop(record) for record in ordered[:1]]
    outcomes += await asyncio.gather(*(stop(record) for record in ordered[1:]))
    left = [record for record, outcome in outcomes if outcome.startswith("not reached")]
    if left:
        state.started = [r for r in state.started if r in left]
        save_state(state)
    else:
        remove_state(state)
    return outcomes


def read_log(record: StartedRecord, lines: int) -> str:
    """The last `lines` of a started process's log, read on its node through its executor; a
    contained process's from its runtime (`logs`), the log file when the container is gone."""
    runner = executor_for(record.executor)
    run = record.process.container
    if run is not None:
        from_runtime = runner.run(container_logs(run, lines))
        if from_runtime.ok:
            return from_runtime.stdout + from_runtime.stderr
    result = runner.run(["tail", "-n", str(lines), record.log_path])
    if not result.ok:
        raise SparkrigError(
            f"cannot read the log {record.log_path} of {record.process.key}: {result.error_line}"
            " — check that it is a readable file on that node"
        )
    return result.stdout
