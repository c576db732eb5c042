"""Same configuration, same verdict? And a configuration 10% slower, still called slower?

Starts the embedded engine (llama-server, the bundled model, as `bench --local` does), then runs
the default bench (default settings; suites decode, concurrency and prefill) three times back
to back, each through its own `sparkrig gateway serve` process in front of that one engine:
- A and A': the same configuration, the gateway passing replies on as they come;
- B: the same engine behind `gateway serve --stretch 0.1`, which delivers every reply 10% later
  (first token and every token gap, measured from the request's arrival: gateway/pacing.py),
  so rates fall to 1/1.1 of A's and times rise by 1.1: an exact, deterministic slowdown.
All three go through a gateway so the only difference between A and B is the stretch. The runs
were made when a gateway's /metrics was its own (it now passes the engine's through), so they
had no idle wait or foreign-traffic check: the other developers' load on this machine is part of
the test, as it is in any run here.

Prints compare's verdict counts (default tolerance, and a few others for the spread) for
A vs A' and A vs B, judged on round means (the default) and, on the same receipts, on samples
only (as one round would be judged); the ratios B/A measured; and every row of A vs A' that was
not 'same'. The spec suite is left out: it needs a second engine (drafting), whose start-up
would sit between A and B.

With --paired, the bench as `bench URL --paired-with URL_B` runs it (rounds alternating between
the two servers, both receipts of one pairing id, compare judging paired rounds), twice:
A vs A' (two plain gateways in front of the one engine) and A vs B (plain vs --stretch 0.1);
it prints both verdict counts, the same receipts judged unpaired, the B/A ratios, and the spread
of the per-round log ratios with the rounds a 10% slowdown would need at that spread.

Run: .venv/bin/python benchmarks/same_verdict.py [--out DIR] [--suites decode,concurrency,prefill]
     [--report-only]  (the report again from the receipts in --out)
     [--stretch-check]  (only the stretch, plain and stretched requests interleaved)
     [--paired]  (the two paired runs; with --report-only, their report)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sparkrig import defaults
from sparkrig.bench.compare import (
    PointComparison,
    compare_receipts,
    paired_round_means,
    round_means,
)
from sparkrig.bench.paired import run_paired_bench
from sparkrig.bench.point import BenchSettings
from sparkrig.bench.receipt import BenchReceipt, load_receipt
from sparkrig.bench.run import run_bench
from sparkrig.bench.statistics import t_quantile_975
from sparkrig.bench.workloads import DECODE_PROMPTS, chat
from sparkrig.client import EndpointClient
from sparkrig.client.first_completion import answer_one_completion
from sparkrig.engines.llamacpp.build import require_installed
from sparkrig.engines.llamacpp.gguf_model import resolve_model
from sparkrig.engines.llamacpp.server import LlamaServerSpec
from sparkrig.launch.local import free_port, plan_local, start_local, stop_local
from sparkrig.launch.signals import stop_cleanly_on_sigterm

SPARKRIG = str(Path(sys.executable).parent / "sparkrig")
STRETCH = 0.10
TOLERANCES = (3.0, defaults.BENCH_COMPARE_TOLERANCE_PCT, 7.0, 10.0)
GATEWAY_START_S = 30.0


@contextmanager
def gateway(upstream: str, stretch: float) -> Iterator[str]:
    """`sparkrig gateway serve` in its own process (its own event loop and core time)."""
    port = free_port(defaults.LOCAL_HOST)
    command = [SPARKRIG, "gateway", "serve", upstream, "--port", str(port)]
    process = subprocess.Popen(
        [*command, "--stretch", str(stretch)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    url = f"http://{defaults.LOCAL_HOST}:{port}"
    try:
        deadline = time.monotonic() + GATEWAY_START_S
        while True:
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=1):  # noqa: S310 - our http URL
                    break
            except (urllib.error.URLError, ConnectionError):
                if process.poll() is not None or time.monotonic() > deadline:
                    _, err = process.communicate(timeout=5)
                    message = f"gateway serve did not start: {err.decode()[-500:]}"
                    raise SystemExit(message) from None
                time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=defaults.GATEWAY_SHUTDOWN_GRACE_S + 10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def counts(rows: list[PointComparison]) -> str:
    tally: Counter[str] = Counter(row.verdict or "not compared" for row in rows)
    order = ("same", "faster", "slower", "not compared")
    return f"{len(rows)} rows: " + ", ".join(f"{tally[k]} {k}" for k in order if tally[k])


def samples_only(receipt: BenchReceipt) -> BenchReceipt:
    """The same receipt with every sample in round 1: compare then judges samples only."""
    copy = receipt.model_copy(deep=True)
    for point in copy.points:
        for sample in point.samples:
            sample.round = 1
    return copy


def ratios(a: BenchReceipt, b: BenchReceipt) -> dict[str, list[float]]:
    """B/A of each point's mean, tok/s and worst TTFT, from compare's own rows."""
    out: dict[str, list[float]] = {"tok/s": [], "TTFT s": []}
    for row in compare_receipts(a, b, 0.0):
        if row.change is not None and row.change.before_mean:
            out[row.quantity].append(row.change.after_mean / row.change.before_mean)
    return out


def round_spreads(receipt: BenchReceipt) -> list[float]:
    """Per point: the relative sd of its round means (tok/s), the spread compare judges by."""
    spreads = []
    for point in receipt.points:
        means = round_means([(sample.round, sample.value) for sample in point.samples])
        if len(means) >= 2 and statistics.mean(means) > 0:
            spreads.append(statistics.stdev(means) / statistics.mean(means))
    return spreads


def describe(values: list[float]) -> str:
    if not values:
        return "none"
    return (
        f"median {statistics.median(values):.3f}, range {min(values):.3f}-{max(values):.3f} "
        f"over {len(values)} points"
    )


def report(receipts: dict[str, BenchReceipt], walls: dict[str, float]) -> dict[str, object]:
    a, a2, b = receipts["A"], receipts["A'"], receipts["B"]
    summary: dict[str, object] = {"wall_s": walls, "stretch": STRETCH}
    print(f"\nwall time per run: {', '.join(f'{k} {v:.0f} s' for k, v in walls.items())}")
    print(
        f"rounds {a.settings.rounds}, {a.settings.min_samples}-{a.settings.max_samples} "
        f"samples a round, suites {', '.join(a.suites)}"
    )
    for label, judge in (("round means (default)", lambda r: r), ("samples only", samples_only)):
        print(f"\njudged on {label}:")
        for tolerance in TOLERANCES:
            same = compare_receipts(judge(a), judge(a2), tolerance)
            slow = compare_receipts(judge(a), judge(b), tolerance)
            mark = " (default)" if tolerance == defaults.BENCH_COMPARE_TOLERANCE_PCT else ""
            print(f"  tolerance {tolerance:g}%{mark}: A vs A' {counts(same)}")
            print(f"  {'':>{len(f'tolerance {tolerance:g}%{mark}')}}  A vs B  {counts(slow)}")
            summary[f"{label} tol {tolerance:g}"] = {
                "A vs A'": dict(Counter(r.verdict or "none" for r in same)),
                "A vs B": dict(Counter(r.verdict or "none" for r in slow)),
            }
    measured = ratios(a, b)
    same_ratio = ratios(a, a2)
    print(f"\nB/A tok/s: {describe(measured['tok/s'])} (expected {1 / (1 + STRETCH):.3f})")
    print(f"B/A TTFT:  {describe(measured['TTFT s'])} (expected {1 + STRETCH:.3f})")
    print(f"A'/A tok/s: {describe(same_ratio['tok/s'])}")
    print(f"A'/A TTFT:  {describe(same_ratio['TTFT s'])}")
    spreads = [s for r in (a, a2, b) for s in round_spreads(r)]
    if spreads:
        print(
            f"round-to-round spread (sd of round means / mean, tok/s, all runs): median "
            f"{statistics.median(spreads):.1%}, largest {max(spreads):.1%}"
        )
        summary["round spreads"] = spreads
    summary["ratios B/A"] = measured
    summary["ratios A'/A"] = same_ratio
    default = defaults.BENCH_COMPARE_TOLERANCE_PCT
    rows = compare_receipts(a, a2, default)
    changes = sorted(abs(r.change.change_pct) for r in rows if r.change is not None)
    if changes:
        print(
            f"A vs A' |change|: median {statistics.median(changes):.1f}%, "
            f"largest {changes[-1]:.1f}%"
        )
    print(f"\nA vs A' rows not 'same' at {default:g}%, and A vs B rows not 'slower':")
    for name, rows_, expected in (
        ("A'", rows, "same"),
        ("B", compare_receipts(a, b, default), "slower"),
    ):
        for row in rows_:
            if row.verdict != expected and row.change is not None:
                c = row.change
                print(
                    f"  {name} {row.suite}/{row.name} {row.quantity}: {row.verdict}, "
                    f"{c.change_pct:+.1f}% "
                    f"[{c.ci95_low_pct or 0:+.1f}, {c.ci95_high_pct or 0:+.1f}]"
                )
    return summary


RUNS = (("A", 0.0), ("A'", 0.0), ("B", STRETCH))
CHECK_PAIRS = 12


async def stretch_check(upstream: str, model: str) -> dict[str, float]:
    """B's slowdown without the drift: one request through the plain gateway and one through
    the stretched one, back to back (order alternating), CHECK_PAIRS times; the median of the
    pairs' ratios of decode rate and of TTFT."""
    rates: list[float] = []
    ttfts: list[float] = []
    request = chat(model, DECODE_PROMPTS["count"], defaults.BENCH_DECODE_TOKENS)
    with gateway(upstream, 0.0) as plain, gateway(upstream, STRETCH) as slow:
        async with EndpointClient(plain) as to_plain, EndpointClient(slow) as to_slow:
            for index in range(CHECK_PAIRS):
                order = (to_plain, to_slow) if index % 2 == 0 else (to_slow, to_plain)
                records = {id(c): await c.send(request) for c in order}
                a, b = records[id(to_plain)], records[id(to_slow)]
                if a.decode_tps and b.decode_tps and a.ttft_s and b.ttft_s:
                    rates.append(b.decode_tps / a.decode_tps)
                    ttfts.append(b.ttft_s / a.ttft_s)
    result = {"tok/s": statistics.median(rates), "TTFT s": statistics.median(ttfts)}
    print(
        f"stretch check, {len(rates)} interleaved pairs: stretched/plain decode tok/s "
        f"{result['tok/s']:.3f} (expected {1 / (1 + STRETCH):.3f}, pairs "
        f"{min(rates):.3f}-{max(rates):.3f}), TTFT {result['TTFT s']:.3f} "
        f"(expected {1 + STRETCH:.3f}, pairs {min(ttfts):.3f}-{max(ttfts):.3f})",
        flush=True,
    )
    return result


def receipt_path(out: Path, name: str) -> Path:
    return out / f"bench-{name.replace(chr(39), '2')}.json"


def report_saved(out: Path) -> None:
    """The report again from the receipts of an earlier run (wall time: first to last save)."""
    receipts, walls = {}, {}
    for name, _ in RUNS:
        path = receipt_path(out, name)
        receipts[name] = load_receipt(path)
        walls[name] = path.stat().st_mtime - receipts[name].created_at.timestamp()
    report(receipts, walls)


PAIRED_RUNS = (("A vs A'", ("A", "A'"), 0.0), ("A vs B", ("A", "B"), STRETCH))


def paired_receipt_paths(out: Path, run: int) -> tuple[Path, Path]:
    _, (first, second), _ = PAIRED_RUNS[run]
    return receipt_path(out, f"paired{run + 1}-{first}"), receipt_path(
        out, f"paired{run + 1}-{second}"
    )


def paired_ratios(a: BenchReceipt, b: BenchReceipt) -> dict[str, list[float]]:
    """B/A of each point as the paired compare measures it: the geometric mean round ratio."""
    out: dict[str, list[float]] = {"tok/s": [], "TTFT s": []}
    for row in compare_receipts(a, b, 0.0):
        if row.change is not None and row.paired_rounds is not None:
            out[row.quantity].append(1 + row.change.change_pct / 100)
    return out


def unpaired(receipt: BenchReceipt) -> BenchReceipt:
    copy = receipt.model_copy(deep=True)
    copy.pairing = None
    return copy


def log_ratio_spreads(a: BenchReceipt, b: BenchReceipt) -> list[float]:
    """Per point (tok/s): the sd of the per-round log(B/A), the spread the paired interval has."""
    spreads = []
    others = {(p.suite, p.name): p for p in b.points}
    for point in a.points:
        other = others.get((point.suite, point.name))
        if other is None:
            continue
        first, second = paired_round_means(
            [(s.round, s.value) for s in point.samples], [(s.round, s.value) for s in other.samples]
        )
        if len(first) >= 2 and min(*first, *second) > 0:
            logs = [math.log(y / x) for x, y in zip(first, second, strict=True)]
            spreads.append(statistics.stdev(logs))
    return spreads


NORMAL_Z_90 = 1.2815515655446004  # the 0.90 quantile of N(0, 1)


def back_to_back_spread(receipt: BenchReceipt) -> float | None:
    """Median over points of the sd of log(second / first) of two samples taken back to back
    in one round: the seconds-scale noise that no pairing of rounds can cancel."""
    spreads = []
    for point in receipt.points:
        by_round: dict[int, list[float]] = {}
        for sample in point.samples:
            by_round.setdefault(sample.round, []).append(sample.value)
        logs = [math.log(v[1] / v[0]) for v in by_round.values() if len(v) >= 2 and min(v) > 0]
        if len(logs) >= 2:
            spreads.append(math.sqrt(statistics.fmean(x * x for x in logs)))
    return statistics.median(spreads) if spreads else None


def rounds_needed(spread: float, change_pct: float, power_z: float = 0.0) -> int | None:
    """The fewest rounds whose paired 95% half-width, t(R-1) s / sqrt(R), is under |log(1+c)|:
    a change of c is then called about half the time. With power_z (NORMAL_Z_90), the rounds
    that call it about 9 times in 10 (normal approximation of the estimate's spread)."""
    target = abs(math.log1p(change_pct / 100))
    for rounds in range(2, 400):
        if (t_quantile_975(rounds - 1) + power_z) * spread / math.sqrt(rounds) < target:
            return rounds
    return None


def paired_report(
    receipts: list[tuple[BenchReceipt, BenchReceipt]], walls: list[float]
) -> dict[str, object]:
    summary: dict[str, object] = {"wall_s": walls, "stretch": STRETCH}
    settings = receipts[0][0].settings
    print(
        f"\npaired: rounds {settings.rounds}, "
        f"{min(settings.min_samples, settings.max_samples)}-{settings.max_samples} "
        f"samples a round, suites {', '.join(receipts[0][0].suites)}; wall "
        + ", ".join(
            f"{name} {wall:.0f} s" for (name, _, _), wall in zip(PAIRED_RUNS, walls, strict=True)
        )
    )
    for (name, _, _), (a, b) in zip(PAIRED_RUNS, receipts, strict=True):
        print(f"\n{name}:")
        for tolerance in TOLERANCES:
            mark = " (default)" if tolerance == defaults.BENCH_COMPARE_TOLERANCE_PCT else ""
            paired_rows = compare_receipts(a, b, tolerance)
            plain_rows = compare_receipts(unpaired(a), unpaired(b), tolerance)
            print(f"  tolerance {tolerance:g}%{mark}: paired {counts(paired_rows)}")
            print(
                f"  {'':>{len(f'tolerance {tolerance:g}%{mark}')}}  unpaired {counts(plain_rows)}"
            )
            summary[f"{name} tol {tolerance:g}"] = {
                "paired": dict(Counter(r.verdict or "none" for r in paired_rows)),
                "unpaired": dict(Counter(r.verdict or "none" for r in plain_rows)),
            }
        measured = paired_ratios(a, b)
        print(
            f"  B/A tok/s, geometric mean of round ratios: {describe(measured['tok/s'])} "
            f"(B = the stretched server expects {1 / (1 + STRETCH):.3f} in A vs B, 1 in A vs A')"
        )
        print(f"  B/A TTFT, geometric mean of round ratios: {describe(measured['TTFT s'])}")
        spreads = log_ratio_spreads(a, b)
        if spreads:
            middle, worst = statistics.median(spreads), max(spreads)
            print(
                f"  sd of per-round log ratios (tok/s): median {middle:.3f}, largest {worst:.3f}; "
                f"rounds to call 10% (9.1%) half the time / 9 in 10, at the median: "
                f"{rounds_needed(middle, -100 / 11)} / "
                f"{rounds_needed(middle, -100 / 11, NORMAL_Z_90)}, at the largest: "
                f"{rounds_needed(worst, -100 / 11)} / "
                f"{rounds_needed(worst, -100 / 11, NORMAL_Z_90)}"
            )
        pairs = [back_to_back_spread(r) for r in (a, b)]
        print(
            "  back-to-back: sd of log ratios of two samples in one round, median per side: "
            + ", ".join("—" if p is None else f"{p:.3f}" for p in pairs)
        )
        unpaired_spreads = round_spreads(a) + round_spreads(b)
        if unpaired_spreads:
            print(
                f"  round-to-round spread of each side alone (sd/mean): median "
                f"{statistics.median(unpaired_spreads):.1%}, largest {max(unpaired_spreads):.1%}"
            )
        summary[f"{name} ratios"] = measured
        summary[f"{name} log ratio spreads"] = spreads
        default = defaults.BENCH_COMPARE_TOLERANCE_PCT
        expected = "same" if name == "A vs A'" else "slower"
        for row in compare_receipts(a, b, default):
            if row.verdict != expected and row.change is not None:
                c = row.change
                print(
                    f"  not {expected}: {row.suite}/{row.name} {row.quantity}: {row.verdict}, "
                    f"{c.change_pct:+.1f}% "
                    f"[{c.ci95_low_pct or 0:+.1f}, {c.ci95_high_pct or 0:+.1f}]"
                )
    return summary


def paired_report_saved(out: Path) -> None:
    receipts, walls = [], []
    for run in range(len(PAIRED_RUNS)):
        first, second = paired_receipt_paths(out, run)
        pair = load_receipt(first), load_receipt(second)
        receipts.append(pair)
        walls.append(
            max(first.stat().st_mtime, second.stat().st_mtime) - pair[0].created_at.timestamp()
        )
    paired_report(receipts, walls)


async def paired_main(upstream: str, out: Path, suites: list[str]) -> None:
    settings = BenchSettings(
        rounds=defaults.BENCH_PAIRED_ROUNDS, max_samples=defaults.BENCH_PAIRED_MAX_SAMPLES
    )
    receipts, walls = [], []
    for run, (name, _, stretch) in enumerate(PAIRED_RUNS):
        first, second = paired_receipt_paths(out, run)
        with gateway(upstream, 0.0) as url_a, gateway(upstream, stretch) as url_b:
            print(f"paired run {name} (stretch {stretch:g}) -> {first}, {second}", flush=True)
            started = time.monotonic()
            receipts.append(
                await run_paired_bench(
                    url_a,
                    url_b,
                    suites=suites,
                    settings=settings,
                    out_path=first,
                    paired_out_path=second,
                )
            )
            walls.append(time.monotonic() - started)
            print(f"paired run {name}: {walls[-1]:.0f} s", flush=True)
    summary = paired_report(receipts, walls)
    (out / "same_verdict_paired.json").write_text(json.dumps(summary, indent=2))


async def main(
    out: Path, suites: list[str], check_only: bool = False, paired: bool = False
) -> None:
    stop_cleanly_on_sigterm()
    engine = require_installed()
    server = LlamaServerSpec(
        binary=engine.server_binary,
        model=resolve_model(None),
        alias=defaults.BUNDLED_MODEL_ALIAS,
        port=free_port(defaults.LOCAL_HOST),
        parallel_slots=defaults.LOCAL_PARALLEL_SLOTS,
        context_tokens=defaults.LOCAL_CONTEXT_TOKENS,
        extra_args=engine.server_args,
    )
    plan = plan_local(server, port_was_chosen=True, engine_build=engine.label)
    record = await start_local(plan, answer_one_completion)
    receipts: dict[str, BenchReceipt] = {}
    walls: dict[str, float] = {}
    try:
        if check_only:
            await stretch_check(record.base_url, defaults.BUNDLED_MODEL_ALIAS)
            return
        if paired:
            await paired_main(record.base_url, out, suites)
            return
        for name, stretch in RUNS:
            with gateway(record.base_url, stretch) as url:
                started = time.monotonic()
                path = receipt_path(out, name)
                print(f"run {name} (stretch {stretch:g}) -> {path}", flush=True)
                receipts[name] = await run_bench(
                    url, suites=suites, settings=BenchSettings(), out_path=path
                )
                walls[name] = time.monotonic() - started
                print(f"run {name}: {walls[name]:.0f} s", flush=True)
    finally:
        await stop_local(record)
    summary = report(receipts, walls)
    (out / "same_verdict.json").write_text(json.dumps(summary, indent=2))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("sparkrig-runs/same-verdict"))
    parser.add_argument("--suites", default="decode,concurrency,prefill")
    parser.add_argument(
        "--report-only", action="store_true", help="print the report of the receipts in --out"
    )
    parser.add_argument(
        "--stretch-check",
        action="store_true",
        help="only measure the stretch itself, plain and stretched requests interleaved",
    )
    parser.add_argument(
        "--paired", action="store_true", help="A vs A' and A vs B, each one paired run"
    )
    args = parser.parse_args()
    if args.report_only:
        (paired_report_saved if args.paired else report_saved)(args.out)
        sys.exit(0)
    args.out.mkdir(parents=True, exist_ok=True)
    suites = [s.strip() for s in args.suites.split(",") if s.strip()]
    asyncio.run(main(args.out, suites, check_only=args.stretch_check, paired=args.paired))
