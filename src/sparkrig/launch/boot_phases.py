"""Boot phases of one rank, read from the engine's own log lines and their timestamps (pure).

vLLM stamps each line `LEVEL MM-DD HH:MM:SS`; llama.cpp stamps `M.SS.mmm.uuu` since the process
started. A phase ends at the first line that says it is done; its duration runs from the end of
the phase before it (the first phase: from the log's first stamped line). The line shapes are
those of real logs: vLLM 0.26.0 (tests/fixtures/vllm/serve.log) and the embedded llama-server
(tests/fixtures/llamacpp/serve.log). A boot of several phases that differ per rank is how a slow
rank shows (field notes: first-boot-717s, uneven-jit-caches).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from pydantic import BaseModel, ConfigDict

from sparkrig.outside_numbers import int_or_none
from sparkrig.registry import Registry


class BootPhase(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    at_s: float  # since the log's first stamped line
    took_s: float  # since the phase before it ended
    line: str


Stamp = Callable[[str], float | None]


@dataclass(frozen=True)
class EngineBootLog:
    """How one engine stamps its lines, and the line that ends each phase, in boot order. A
    phase may be listed twice: the first listing whose line the log holds ends it (vLLM's GPU
    runner says "Model loading took", its CPU runner only "Loading weights took")."""

    stamp: Stamp
    phases: tuple[tuple[str, re.Pattern[str]], ...]


_VLLM_STAMP = re.compile(
    r"\b(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) (\d\d)-(\d\d) (\d\d):(\d\d):(\d\d) "
)
_LLAMA_STAMP = re.compile(r"^(\d{1,6})\.(\d\d)\.(\d{3})\.(\d{3}) [A-Z] ")


def _vllm_stamp(line: str) -> float | None:
    found = _VLLM_STAMP.search(line)
    if found is None:
        return None
    month, day, hour, minute, second = (int_or_none(part) for part in found.groups())
    if None in (month, day, hour, minute, second):
        return None
    try:  # the log gives no year: a leap year takes every date
        moment = datetime(2000, month or 0, day or 0, hour or 0, minute or 0, second or 0)
    except ValueError:
        return None
    return (moment - datetime(2000, 1, 1)).total_seconds()


def _llama_stamp(line: str) -> float | None:
    found = _LLAMA_STAMP.match(line)
    if found is None:
        return None
    minutes, seconds, millis, micros = (int_or_none(part) or 0 for part in found.groups())
    return minutes * 60 + seconds + millis / 1e3 + micros / 1e6


BOOT_LOGS: Registry[EngineBootLog] = Registry("engine boot log")
BOOT_LOGS.add(
    "vllm",
    EngineBootLog(
        stamp=_vllm_stamp,
        phases=(
            ("weights loaded", re.compile(r"Model loading took .* seconds")),
            ("weights loaded", re.compile(r"Loading weights took [\d.]+ seconds")),
            ("KV cache sized", re.compile(r"[GC]PU KV cache size: [\d,]+ tokens")),
            ("graphs captured", re.compile(r"Graph capturing finished in")),
            # profile, KV cache and warm-up (with torch.compile, where the CPU build compiles)
            ("engine warmed up", re.compile(r"init engine \(.*\) took [\d.]+ s")),
            ("API up", re.compile(r"Starting vLLM server on http")),
        ),
    ),
)
BOOT_LOGS.add(
    "llamacpp",
    EngineBootLog(
        stamp=_llama_stamp,
        phases=(
            ("slots sized", re.compile(r"load_model: initializing, n_slots = \d+")),
            ("model loaded", re.compile(r"llama_server: model loaded")),
            ("API up", re.compile(r"listening on http://")),
        ),
    ),
)


def boot_phases(lines: Sequence[str], engine: str) -> list[BootPhase]:
    """The phases this log has reached so far, in boot order; [] for an engine without a
    catalogued boot log or a log without stamps."""
    if engine not in BOOT_LOGS:
        return []
    log = BOOT_LOGS.get(engine)
    start: float | None = None
    reached: dict[int, tuple[float, str]] = {}  # by listing
    last_stamp: float | None = None
    for line in lines:
        stamp = log.stamp(line)
        if stamp is not None:
            if last_stamp is not None and stamp < last_stamp:
                stamp += 366 * 86400  # the year turned during the boot
            last_stamp = stamp
            start = stamp if start is None else start
        if last_stamp is None:
            continue
        for index, (_, pattern) in enumerate(log.phases):
            if index not in reached and pattern.search(line):
                reached[index] = (last_stamp, line.strip())
    phases: list[BootPhase] = []
    previous = start
    for name in dict.fromkeys(name for name, _ in log.phases):
        listed = [i for i, (other, _) in enumerate(log.phases) if other == name and i in reached]
        if not listed or start is None or previous is None:
            continue
        at, line = reached[listed[0]]
        phases.append(
            BootPhase(
                name=name, at_s=round(at - start, 3), took_s=round(at - previous, 3), line=line
            )
        )
        previous = at
    return phases


def slowest_phase(by_rank: dict[str, list[BootPhase]]) -> tuple[str, BootPhase] | None:
    """The rank and phase that took longest, over every rank's boot; None without phases."""
    every = [(key, phase) for key, phases in by_rank.items() for phase in phases]
    return max(every, key=lambda pair: pair[1].took_s) if every else None
