"""Telemetry of the cluster's nodes through their executors (local, netns, ssh), the same
figures as this host's sampler but read by a shell loop on the node: `start` leaves the loop
running in the background, writing to a temporary file there; `stop` ends it and reads the file
back; `parse_stream` (pure) turns that text into a `Telemetry`. No sparkrig on the node."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from sparkrig import defaults
from sparkrig.doctor.parse import sysfs_values
from sparkrig.doctor.telemetry import (
    PROC_FILES,
    Reading,
    left_out,
    rdma_counters,
    reading,
    sample_between,
    went_backwards,
)
from sparkrig.doctor.telemetry_model import GpuSample, Telemetry, TelemetrySample
from sparkrig.errors import ExecutorError
from sparkrig.fabric.runner import CommandRunner
from sparkrig.outside_numbers import float_or_none, int_or_none

_RDMA_FILES = " ".join(
    [
        "/sys/class/infiniband/*/ports/*/counters/port_rcv_data",
        "/sys/class/infiniband/*/ports/*/counters/port_xmit_data",
        *(
            f"/sys/class/infiniband/*/ports/*/hw_counters/{n}"
            for n in defaults.DOCTOR_ROCE_ERROR_COUNTERS
        ),
    ]
)
# The GPU query of the field reports' own capture (the V4.1 thread asks for these columns each
# second; field notes: sm-clock-cap);
# one call costs about 26 ms of CPU on an H200 host. Absent nvidia-smi prints nothing.
GPU_QUERY = (
    "index,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu,"
    "clocks_event_reasons.active"
)
# One block a tick: `@@ TIME`, then `@@@ NAME` and the lines the readers use (about 1 KB, so a
# day of soak stays under 100 MB in /tmp). The loop ends by itself after its lifetime, so a node
# that stops answering before `stop` is not left sampling. Its own CPU time is read from
# /proc/PID/stat when it stops (utime + stime + the children it waited for).
_LOOP = (
    "f=$(mktemp /tmp/sparkrig-telemetry.XXXXXX) || exit 1; "
    "end=$(( $(date +%s) + $2 )); "
    '( while [ "$(date +%s)" -lt "$end" ]; do echo "@@ $(date +%s.%N)"; '
    "echo '@@@ stat'; grep '^cpu ' /proc/stat; "
    "echo '@@@ vmstat'; grep '^pswp' /proc/vmstat; "
    "echo '@@@ meminfo'; grep -E '^(MemTotal|MemFree|MemAvailable):' /proc/meminfo; "
    "echo '@@@ net/dev'; cat /proc/net/dev; "
    f'echo "@@@ rdma"; grep -s -H . {_RDMA_FILES}; '
    f'echo "@@@ gpu"; nvidia-smi --query-gpu={GPU_QUERY} --format=csv,noheader,nounits; '
    'sleep "$1"; done ) > "$f" 2>/dev/null < /dev/null & '
    'echo "$! $f"'
)
_STOP = (
    'echo "@@cost $(getconf CLK_TCK) $(cut -d" " -f14-17 /proc/$1/stat 2>/dev/null) '
    '$(cut -d" " -f22 /proc/$1/stat 2>/dev/null) $(cut -d" " -f1 /proc/uptime)"; '
    'kill "$1" 2>/dev/null; cat "$2"; rm -f "$2"'
)


@dataclass(frozen=True)
class NodeSampler:
    node: str
    pid: str
    path: str


def start(
    node: str, runner: CommandRunner, interval_s: float, lifetime_s: float | None = None
) -> NodeSampler:
    lifetime = f"{lifetime_s or defaults.TELEMETRY_NODE_MAX_S:.0f}"
    result = runner.run(["sh", "-c", _LOOP, "sh", f"{interval_s:g}", lifetime])
    words = result.stdout.split()
    if not result.ok or len(words) != 2 or not words[0].isdigit():
        raise ExecutorError(
            f"telemetry did not start on {node}: {result.error_line} — run doctor on the node"
        )
    return NodeSampler(node=node, pid=words[0], path=words[1])


def stop(sampler: NodeSampler, runner: CommandRunner, interval_s: float) -> Telemetry:
    result = runner.run(["sh", "-c", _STOP, "sh", sampler.pid, sampler.path])
    return parse_stream(result.stdout, sampler.node, interval_s)


def _cost(line: str) -> tuple[float, float]:
    """(CPU seconds the loop used, seconds it ran) from the `@@cost` line."""
    words = line.split()[1:]
    values = [float_or_none(w, minimum=0) for w in words]
    if len(values) != 7 or None in values or not values[0]:
        return 0.0, 0.0  # no tick rate: the cost is unknown, not divided by zero
    ticks, *times = (v or 0.0 for v in values)
    cpu = sum(times[0:4]) / ticks
    ran = times[5] - times[4] / ticks
    return cpu, ran


def _number(text: str) -> float | None:
    return float_or_none(text)  # None for `[N/A]`, `[Not Supported]`


def gpu_rows(text: str) -> list[GpuSample]:
    """`nvidia-smi --query-gpu=GPU_QUERY --format=csv,noheader,nounits` lines."""
    gpus = []
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.split(",")]
        index = int_or_none(cells[0], minimum=0) if len(cells) == 7 else None
        if index is None:
            continue
        values = [_number(cell) for cell in cells[:6]]
        reasons = int_or_none(cells[6], minimum=0, base=16) if cells[6].startswith("0x") else None
        gpus.append(
            GpuSample(
                index=index,
                sm_clock_mhz=None if values[1] is None else round(values[1]),
                mem_clock_mhz=None if values[2] is None else round(values[2]),
                power_w=values[3],
                temperature_c=None if values[4] is None else round(values[4]),
                utilization_percent=None if values[5] is None else round(values[5]),
                clock_event_reasons=reasons,
            )
        )
    return gpus


def _readings(
    blocks: list[tuple[float, dict[str, str]]],
) -> tuple[list[tuple[Reading, dict[str, str]]], list[str]]:
    """Each whole block's reading; a block whose time or numbers are not numbers is left out,
    named, and the stream goes on (one bad block must not lose a day of soak)."""
    readings, notes = [], []
    for index, (at, files) in enumerate(blocks):
        try:
            if math.isnan(at):
                raise ValueError("its `@@ TIME` line is not seconds since 1970")
            rdma = rdma_counters(sysfs_values(files.get("rdma", "")))
            readings.append((reading(at, files, rdma), files))
        except ValueError as exc:  # OutsideNumberError, and a reader's own refusals
            notes.append(f"block {index + 1} of the stream: {exc}; no sample there")
    return readings, notes


def parse_stream(text: str, host: str, interval_s: float) -> Telemetry:
    cpu_s, wall_s = 0.0, 0.0
    blocks: list[tuple[float, dict[str, str]]] = []
    name = ""
    for line in text.splitlines(keepends=True):
        if line.startswith("@@cost"):
            cpu_s, wall_s = _cost(line)
        elif line.startswith("@@@ "):
            name = line[4:].strip()
            blocks[-1][1][name] = ""
        elif line.startswith("@@ "):
            at = float_or_none(line[3:], minimum=0)
            blocks.append((math.nan if at is None else at, {}))
            name = ""
        elif blocks and name:
            blocks[-1][1][name] += line
    whole = [(t, f) for t, f in blocks if all(f.get(n) for n in PROC_FILES) and "gpu" in f]
    readings, notes = _readings(whole)
    begin = readings[0][0].t if readings else 0.0
    samples: list[TelemetrySample] = []
    for (before, _), (after, files) in itertools.pairwise(readings):
        if (why := went_backwards(before, after)) is None:
            samples.append(sample_between(begin, before, after, gpu_rows(files["gpu"])))
        else:
            notes.append(left_out(begin, after.t, why))
    with_gpu = any(s.gpus for s in samples)
    return Telemetry(
        host=host,
        interval_s=interval_s,
        started_at=begin,
        samples=samples,
        left_out=notes,
        gpu_source="nvidia-smi" if with_gpu else "no GPU figures: no nvidia-smi on the node",
        sampler_cpu_s=round(cpu_s, 4),
        sampler_wall_s=round(wall_s, 3),
    )
