"""Ranks whose log has gone quiet while their process lives, for `status`, told apart by their
node's GPU: a quiet log alone is no stall (an idle worker logs nothing, and a good start can
print nothing for a minute: field notes: log-silence-is-not-a-stall), but a quiet log over a busy
GPU is how a very slow path or a deadlock looks from outside (field notes: slow-path-looks-hung).

The GPU is read on the node with `nvidia-smi --query-gpu=index,utilization.gpu` when the node has
it (found at run time); without it the verdict says "GPU not read" rather than guessing. The
reading and the verdict are pure; `read_gpus` is the I/O shell, through each node's executor.
"""

from __future__ import annotations

import asyncio

from pydantic import BaseModel

from sparkrig import defaults
from sparkrig.errors import ExecutorError
from sparkrig.fabric.runner import CommandResult, ExecutorSpec
from sparkrig.launch.executors import executor_for
from sparkrig.outside_numbers import int_or_none


def stack_sampling_step(pid: str = "PID", where: str = "") -> str:
    """How to tell a slow path from a deadlock (field notes: slow-path-looks-hung); the quiet
    rank here and the /metrics stall of client/serving_stall.py both name it."""
    return (
        f"sample the worker's stack a few times, seconds apart (`py-spy dump --pid {pid}`{where}, "
        "or gdb's `thread apply all bt` for a C++ engine): frames that change are a slow path "
        "(docs/field-notes.md#slow-path-looks-hung), frames that stay put are a deadlock"
    )


_ABSENT = "no nvidia-smi"
# `command -v` first, so a node without the tool says so instead of failing like a broken one
GPU_SCRIPT = [
    "sh",
    "-c",
    f'command -v nvidia-smi >/dev/null 2>&1 || {{ echo "{_ABSENT}"; exit 0; }}; '
    "nvidia-smi --query-gpu=index,utilization.gpu --format=csv,noheader,nounits 2>&1",
]


class GpuReading(BaseModel):
    busy_percent: int | None  # the busiest GPU of the node; None: not read
    note: str


class QuietRank(BaseModel):
    key: str
    node: str
    pid: int | None
    quiet_s: int
    gpu_busy_percent: int | None
    verdict: str  # "suspect", "idle" or "unknown"
    message: str


def gpu_reading(node: str, result: CommandResult) -> GpuReading:
    """The busiest GPU's utilisation from the query's `INDEX, PERCENT` lines (pure). A rank's
    own GPU is not known from outside, so the node's busiest stands for it."""
    if result.ok and result.stdout.strip() == _ABSENT:
        return GpuReading(busy_percent=None, note=f"GPU not read: no nvidia-smi on node {node}")
    percents = []
    for line in result.stdout.splitlines():
        cells = [cell.strip() for cell in line.split(",")]
        if len(cells) == 2 and int_or_none(cells[0], minimum=0) is not None:
            percent = int_or_none(cells[1], minimum=0, maximum=100)
            if percent is not None:
                percents.append(percent)
    if not result.ok or not percents:
        said = result.error_line or result.stdout.strip()[:120] or "no GPU rows"
        return GpuReading(busy_percent=None, note=f"GPU not read: nvidia-smi on {node}: {said}")
    busiest = max(percents)
    return GpuReading(busy_percent=busiest, note=f"GPU {busiest}% busy on node {node}")


def quiet_verdict(
    key: str,
    node: str,
    pid: int | None,
    quiet_s: int,
    gpu: GpuReading,
    *,
    busy_percent: int = defaults.STATUS_GPU_BUSY_PERCENT,
) -> QuietRank:
    """A quiet rank named: a suspect stall when its node's GPU is busy, idle when it is not,
    unknown when the GPU was not read (pure)."""
    said = f"{key}: log quiet for {quiet_s} s while its process lives; {gpu.note}"
    if gpu.busy_percent is None:
        verdict, message = "unknown", f"{said} — idle or stalled cannot be told apart here"
    elif gpu.busy_percent >= busy_percent:
        verdict = "suspect"
        step = stack_sampling_step(str(pid) if pid is not None else "PID", f" on node {node}")
        message = f"{said}: a stall or a very slow path — {step}"
    else:
        verdict, message = "idle", f"{said}: idle"
    return QuietRank(
        key=key,
        node=node,
        pid=pid,
        quiet_s=quiet_s,
        gpu_busy_percent=gpu.busy_percent,
        verdict=verdict,
        message=message,
    )


def _read_gpu(node: str, spec: ExecutorSpec) -> GpuReading:
    try:
        result = executor_for(spec).run(GPU_SCRIPT)
    except ExecutorError as exc:
        return GpuReading(busy_percent=None, note=f"GPU not read: node {node}: {exc}")
    return gpu_reading(node, result)


async def read_gpus(nodes: dict[str, ExecutorSpec]) -> dict[str, GpuReading]:
    """Each node's GPU reading, all nodes at once."""
    names = list(nodes)
    readings = await asyncio.gather(
        *(asyncio.to_thread(_read_gpu, node, nodes[node]) for node in names)
    )
    return dict(zip(names, readings, strict=True))
