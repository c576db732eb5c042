"""A serving stall: the API answers and requests are running, but the engine's token counters
do not move between two /metrics scrapes. From outside a very slow path looks exactly like a
hang (a worker busy for 30 minutes at 96% GPU, its logs quiet, the API answering: field notes:
slow-path-looks-hung); only sampling the worker's stack tells them apart, so the verdict names
that step. Pure: two snapshots in, a verdict out."""

from __future__ import annotations

from pydantic import BaseModel

from sparkrig.client.metrics import MetricsSnapshot
from sparkrig.engines.metric_map import Quantity
from sparkrig.launch.quiet_ranks import stack_sampling_step

STACK_STEP = stack_sampling_step()  # on each rank


class StallVerdict(BaseModel):
    state: str  # "stalled", "moving", "idle" or "unknown"
    running: float | None
    window_s: float
    message: str


def _scalar(snapshot: MetricsSnapshot, quantity: Quantity) -> float | None:
    value = snapshot.read(quantity)
    return value if isinstance(value, float | int) and not isinstance(value, bool) else None


def serving_stall(before: MetricsSnapshot, after: MetricsSnapshot) -> StallVerdict:
    window = max(0.0, (after.taken_ns - before.taken_ns) / 1e9)
    running = [_scalar(s, Quantity.REQUESTS_RUNNING) for s in (before, after)]
    if running[0] is None or running[1] is None:
        return StallVerdict(
            state="unknown",
            running=None,
            window_s=window,
            message="the engine's /metrics has no running-requests gauge — no stall verdict",
        )
    if running[0] == 0 or running[1] == 0:
        return StallVerdict(
            state="idle", running=running[1], window_s=window, message="no request was running"
        )
    counters = (Quantity.GENERATED_TOKENS, Quantity.PROMPT_TOKENS, Quantity.DECODE_STEPS)
    moved = []
    for quantity in counters:
        first, second = _scalar(before, quantity), _scalar(after, quantity)
        if first is not None and second is not None and second != first:
            moved.append(f"{quantity} +{second - first:g}")
    if moved:
        return StallVerdict(
            state="moving",
            running=running[1],
            window_s=window,
            message=f"{running[1]:g} requests running; in {window:.1f} s: {', '.join(moved)}",
        )
    return StallVerdict(
        state="stalled",
        running=running[1],
        window_s=window,
        message=(
            f"serving stall: {running[1]:g} requests running but no token generated or read in "
            f"{window:.1f} s while the API answers — {STACK_STEP}"
        ),
    )
