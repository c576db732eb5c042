"""Memory, swap, clock sync and the systemd units that run the engine."""

from __future__ import annotations

from sparkrig import defaults
from sparkrig.doctor.checks.gpu import unified_memory
from sparkrig.doctor.model import NodeCapture
from sparkrig.doctor.parse import colon_fields, meminfo_kib, systemd_show, vmstat_rows
from sparkrig.doctor.registry import Hit, NodeContext, node_check
from sparkrig.outside_numbers import parse_float

NOTES = "docs/field-notes.md"
GIB = 1024**2  # KiB per GiB


@node_check(
    "page-cache-unified",
    summary="free memory covers the engine's share without the page cache",
    why="on unified memory the page cache and the GPU share one pool; a worker asking for 0.85 "
    "died with NV_ERR_NO_MEMORY until caches were dropped",
    source=f"{NOTES} (page cache on unified memory)",
    needs=("meminfo",),
)
def page_cache_unified(capture: NodeCapture, context: NodeContext) -> list[Hit]:
    if not unified_memory(capture.text("nvidia_smi") or ""):
        return []  # a GPU with its own memory: the page cache takes nothing from it
    info = meminfo_kib(capture.text("meminfo") or "")
    total, free = info["MemTotal"], info.get("MemFree", 0)
    cached = info.get("Cached", 0) + info.get("Buffers", 0)
    need = context.gpu_memory_utilization * total
    if free >= need or free + cached < need:
        return []
    return [
        Hit(
            "warning",
            f"MemFree {free / GIB:.1f} GiB, page cache {cached / GIB:.1f} GiB; "
            f"gpu_memory_utilization {context.gpu_memory_utilization:g} needs {need / GIB:.1f} GiB "
            f"of {total / GIB:.1f} GiB",
            "`sync; echo 3 | sudo tee /proc/sys/vm/drop_caches` right before starting the engine",
        )
    ]


@node_check(
    "engine-start-memory",
    summary="free memory, page cache dropped, covers the engine's share at start",
    why="vLLM refuses to start when the device's free memory is below gpu_memory_utilization × "
    "total (its startup check prints both); on unified memory the device's free memory is the "
    "host's, so what other processes hold counts against the engine",
    source=f"{NOTES} (page cache on unified memory)",
    needs=("meminfo",),
)
def engine_start_memory(capture: NodeCapture, context: NodeContext) -> list[Hit]:
    if not unified_memory(capture.text("nvidia_smi") or ""):
        return []
    info = meminfo_kib(capture.text("meminfo") or "")
    total = info["MemTotal"]
    room = info.get("MemFree", 0) + info.get("Cached", 0) + info.get("Buffers", 0)
    need = context.gpu_memory_utilization * total
    if room >= need:
        return []
    fits = room / total
    return [
        Hit(
            "error",
            f"free + page cache {room / GIB:.1f} GiB of {total / GIB:.1f} GiB; "
            f"gpu_memory_utilization {context.gpu_memory_utilization:g} needs {need / GIB:.1f} GiB",
            f"stop what holds the memory (`ps aux --sort=-rss | head`), or lower "
            f"gpu_memory_utilization to at most {fits:.2f}",
        )
    ]


@node_check(
    "swap-activity",
    summary="nothing swaps in or out",
    why="any swap in or out at large KV sizing slows every step",
    source=f"{NOTES} (swap)",
    needs=("vmstat",),
)
def swap_activity(capture: NodeCapture, context: NodeContext) -> list[Hit]:
    live = vmstat_rows(capture.text("vmstat") or "")[1:]  # the first row averages since boot
    swapped = [(row["si"], row["so"]) for row in live if row["si"] or row["so"]]
    if not swapped:
        return []
    listed = "; ".join(f"si {si} so {so}" for si, so in swapped)
    return [
        Hit(
            "warning",
            f"vmstat 1: {listed} (blocks/s)",
            "lower gpu_memory_utilization or max_model_len, stop other work on the node; "
            "`swapoff -a` once memory is free",
        )
    ]


@node_check(
    "clock-sync",
    summary="chrony is synchronised and close to its source",
    why="nodes compare each other's timestamps (readiness by liveness, log order); an "
    "unsynchronised clock makes a live node look stalled or a stalled one live",
    source="docs/launch.md (readiness by liveness)",
    needs=("chronyc",),
)
def clock_sync(capture: NodeCapture, context: NodeContext) -> list[Hit]:
    fields = colon_fields(capture.text("chronyc") or "", "chronyc tracking")
    leap = fields.get("Leap status", "")
    offset_text = fields.get("System time", "")
    words = offset_text.split()
    # an offset that is not a number is unreadable, never 0 (in sync)
    offset = (
        parse_float(words[0], source="chronyc tracking", field="System time", minimum=0)
        if words
        else 0.0
    )
    if leap == "Normal" and offset <= defaults.DOCTOR_CHRONY_OFFSET_MAX_S:
        return []
    return [
        Hit(
            "warning",
            f"chronyc tracking: Leap status {leap!r}, System time {offset_text!r}",
            "`chronyc sources -v` to see why; point every node at the same NTP source "
            "(`server HOST iburst` in /etc/chrony/chrony.conf), then `chronyc makestep`",
        )
    ]


_RESTARTING = ("on-failure", "always", "on-abnormal", "on-abort", "on-watchdog")


@node_check(
    "engine-unit-restart",
    summary="no systemd unit will restart an engine behind a manual kill",
    why="a unit with Restart=on-failure brought the old configuration back about 60 s after a "
    "manual kill and relaunch",
    source=f"{NOTES} (systemd restarts)",
    needs=("systemd_units",),
)
def engine_unit_restart(capture: NodeCapture, context: NodeContext) -> list[Hit]:
    hits = []
    for unit in systemd_show(capture.text("systemd_show") or ""):
        if unit.get("Restart") in _RESTARTING:
            name = unit.get("Id", "?")
            hits.append(
                Hit(
                    "warning",
                    f"{name}: Restart={unit['Restart']} (after {unit.get('RestartUSec', '?')}), "
                    f"{unit.get('ActiveState', '?')}, {unit.get('UnitFileState', '?')}",
                    f"stop and start it only through systemd (`systemctl stop {name}`), or "
                    f"`systemctl disable --now {name}` while sparkrig manages the engine",
                )
            )
    return hits
