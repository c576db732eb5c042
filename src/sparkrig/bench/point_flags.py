"""The warnings a benchmark point carries once its samples are in: imprecise, two speeds,
client-limited, a cold engine, a cold prefill the server's counters do not confirm, prefix reuse
missed. Each says what was seen and what to do; none changes a figure."""

from __future__ import annotations

from sparkrig import defaults
from sparkrig.bench.client_shards import ClientLoad
from sparkrig.bench.cold_cache import judge_cold
from sparkrig.bench.modes import TWO_SPEEDS_PREFIX, two_speeds
from sparkrig.bench.multiturn_figures import REUSE_PREFIX
from sparkrig.bench.point_result import PointResult
from sparkrig.bench.statistics import summarize
from sparkrig.client.metrics import MetricsSnapshot


def flag_imprecise(point: PointResult, values: list[float], precision: float, when: str) -> None:
    point.imprecise = True
    relative = summarize(values).relative_half_width if values else None
    spread = "no interval" if relative is None else f"±{relative:.1%}"
    point.warnings.append(
        f"imprecise: {when} ended at {len(values)} samples with {spread}, short of the "
        f"±{precision:.1%} asked for — raise --max-samples or --rounds, or read this point as "
        "rough"
    )


def flag_two_speeds(point: PointResult) -> None:
    """Look again over every sample so far (all rounds); the warning says the latest finding."""
    point.two_speeds = two_speeds([sample.value for sample in point.samples])
    point.warnings = [w for w in point.warnings if not w.startswith(TWO_SPEEDS_PREFIX)]
    if point.two_speeds is not None:
        point.warnings.append(
            f"{point.two_speeds.describe(_unit(point.metric))} — the median is one of "
            "them and the interval spans both; the engine's speed depends on something this "
            "point does not set (on llama.cpp with --parallel: which slots a batch lands on; try "
            "--kv-unified, docs/metrics.md#two-speeds)"
        )


def _unit(metric: str) -> str:
    return "tok/s" if "tok/s" in metric else ""


def flag_client_limited(point: PointResult, load: ClientLoad) -> None:
    """Flag the point, with a warning from its first saturated sample."""
    if point.client_limited:
        return
    point.client_limited = True
    point.warnings.append(
        f"client-limited: a client process was runnable {load.busiest:.0%} of a sample (on a "
        f"core or queued for one; limit {defaults.BENCH_CLIENT_BUSY_LIMIT:.0%}) — its timings "
        "include queueing in the client; raise --client-processes, free the client's cores, "
        "or read this point as the client's ceiling"
    )


def no_idle_check_warning(snapshot: MetricsSnapshot | None) -> str:
    """Why the sample could not wait for an idle server: no /metrics, or no gauge in it."""
    if snapshot is None:
        return "no /metrics: idle check and foreign-traffic check are off"
    engine = snapshot.engine or "an engine sparkrig does not recognise"
    return (
        f"/metrics answered ({engine}) but holds no running-requests gauge: idle check and "
        "foreign-traffic check are off"
    )


def warn_once(point: PointResult, warning: str) -> None:
    if warning not in point.warnings:
        point.warnings.append(warning)


def confirm_cold(point: PointResult) -> None:
    if not point.expects_cold or not point.samples:
        return
    requests = sum(len(sample.requests) for sample in point.samples)
    point.cold_cache = judge_cold((sample.metrics for sample in point.samples), requests)
    if point.cold_cache.verdict != "confirmed":
        warn_once(point, point.cold_cache.note)


def note_prefix_reuse(point: PointResult) -> None:
    """A multiturn point whose later turns missed the cache, or cannot tell, says so; the
    latest verdict over all rounds replaces the one before."""
    point.warnings = [w for w in point.warnings if not w.startswith(REUSE_PREFIX)]
    if point.multiturn is not None and point.multiturn.verdict != "reused":
        point.warnings.append(point.multiturn.note)


def flag_cold_start(point: PointResult) -> None:
    if point.warmup_primes_cache or not point.warmup_values or point.summary is None:
        return
    if point.summary.median <= 0:
        return
    first = point.warmup_values[0]
    slower = 1 - first / point.summary.median
    # a first request inside the steady samples' own spread is noise, not a cold engine
    beyond_spread = first < point.summary.min
    if slower > defaults.BENCH_COLD_PENALTY and beyond_spread and not point.cold_start:
        point.cold_start = True
        point.warnings.append(
            f"cold engine: first request {first:.1f} vs steady median {point.summary.median:.1f} "
            f"({slower:.0%} slower); discarded as warm-up, not averaged in — a freshly started "
            "engine reaches its steady speed only after some real generations (compiled "
            "kernels, caches; a DSpark speculative runtime took about five 500–700-token "
            "ones): send a few first (a `bench --suite decode --tokens 600` run, discarded) "
            "(docs/field-notes.md#warmup-penalty)"
        )
