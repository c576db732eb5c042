"""Ready by liveness, decided by pure functions over what was observed.

Each process has a phase (starting, listening, healthy; or exited, stalled). `up` waits while
every process that is not ready yet is alive and its log advances; it fails at once, naming the
node, when one exits or stops advancing for longer than the stall window. No fixed timeout
decides readiness (research §3 "start/stop orchestration";
docs/field-notes.md#rendezvous-on-liveness).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import StrEnum

from sparkrig.engines.launch_spec import ProcessSpec
from sparkrig.launch.node_commands import ProcessObservation

CompletionProbe = Callable[[str, str], Awaitable[None]]
"""Given the API URL and model id, raise unless the engine answers one real completion: the
last step of ready, for one local server and for a cluster alike."""


class Phase(StrEnum):
    STARTING = "starting"  # alive, not ready yet
    LISTENING = "listening"  # its port is open (API still loading, or an RPC worker ready)
    HEALTHY = "healthy"  # the API answers /health
    RUNNING = "running"  # alive, and alive is all it reports (a headless vLLM worker)
    EXITED = "exited"
    STALLED = "stalled"
    NOT_STARTED = "not started"
    UNREACHABLE = "unreachable"  # its node did not answer (status only)


@dataclass(frozen=True)
class Sighting:
    """A process seen once: what its node reported, and (head only) whether /health said 200."""

    observation: ProcessObservation
    healthy: bool = False
    api_error: str | None = None
    """why no connection from here reached the API (refused, no route, timed out); None when
    one did, or none was tried"""


@dataclass(frozen=True)
class Progress:
    """When a process last showed progress: its log grew or its phase changed."""

    log_bytes: int
    phase: Phase
    since: float


def phase_of(process: ProcessSpec, sighting: Sighting) -> Phase:
    seen = sighting.observation
    if not seen.alive:
        return Phase.EXITED
    if process.ready_when == "alive":
        return Phase.RUNNING
    if sighting.healthy:
        return Phase.HEALTHY
    if seen.port_open:
        return Phase.LISTENING
    return Phase.STARTING


def is_ready(process: ProcessSpec, phase: Phase) -> bool:
    wanted = {"alive": Phase.RUNNING, "port": Phase.LISTENING, "health": Phase.HEALTHY}
    if process.ready_when == "port" and phase == Phase.HEALTHY:
        return True
    return phase == wanted[process.ready_when]


def track_progress(
    previous: Progress | None, sighting: Sighting, phase: Phase, now: float
) -> Progress:
    size = sighting.observation.log_bytes
    if previous is None or size != previous.log_bytes or phase != previous.phase:
        return Progress(log_bytes=size, phase=phase, since=now)
    return previous


@dataclass(frozen=True)
class ReadinessState:
    """Where a start stands: ready, still waiting (on which processes), or failed (which, why)."""

    state: str  # "ready", "waiting" or "failed"
    process: ProcessSpec | None = None
    reason: str = ""
    waiting_on: tuple[str, ...] = ()


def assess_startup(
    watched: list[tuple[ProcessSpec, Phase, Progress]],
    now: float,
    stall_window_s: float,
    *,
    api_later: bool = False,
) -> ReadinessState:
    """Failed at the first dead or stalled process (in start order); ready when every process
    is ready; otherwise waiting on the ones that are not. `api_later`: an API process (ready by
    health) only has to be alive yet — `up` waits for it after the rest have started."""

    def ready(process: ProcessSpec, phase: Phase) -> bool:
        return (api_later and process.ready_when == "health") or is_ready(process, phase)

    for process, phase, progress in watched:
        if phase == Phase.EXITED:
            return ReadinessState("failed", process, "exited")
        if not ready(process, phase) and now - progress.since > stall_window_s:
            return ReadinessState(
                "failed",
                process,
                f"stalled: its log has not advanced for {now - progress.since:.0f} s "
                f"(stall window {stall_window_s:g} s) in phase {phase}",
            )
    waiting = tuple(p.key for p, phase, _ in watched if not ready(p, phase))
    if waiting:
        return ReadinessState("waiting", waiting_on=waiting)
    return ReadinessState("ready")


def cluster_readiness(phases: dict[str, Phase], completion_ok: bool | None) -> tuple[bool, str]:
    """Ready = every process alive and ready, the head healthy, one real completion answered."""
    gone = {Phase.EXITED, Phase.NOT_STARTED, Phase.UNREACHABLE}
    down = [key for key, phase in phases.items() if phase in gone]
    if down:
        return False, f"not ready: {', '.join(down)} not running"
    if Phase.HEALTHY not in phases.values():
        return False, "not ready: the head's API does not answer /health"
    if completion_ok is not True:
        return False, (
            "not ready: the head is healthy but answered no completion (a rank that died can "
            "leave /health answering: `sparkrig logs CLUSTER --scan`)"
        )
    return True, "ready"
