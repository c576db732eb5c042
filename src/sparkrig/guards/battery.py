"""The battery: which guards exist, which run in --quick, and the run that writes the receipt
after every guard."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from sparkrig.client import EndpointClient
from sparkrig.client.live_kv_pool import read_kv_pool
from sparkrig.client.metrics import try_scrape_metrics
from sparkrig.client.probe import first_model_id
from sparkrig.errors import UsageError
from sparkrig.guards.acceptance import acceptance_guard
from sparkrig.guards.baseline import default_baseline_path, load_baseline, save_baseline
from sparkrig.guards.consistency import consistency_guard
from sparkrig.guards.context import CheckSettings, GuardContext, GuardFunction
from sparkrig.guards.determinism import determinism_guard
from sparkrig.guards.drift import drift_guard, drift_opening
from sparkrig.guards.exact import exact_guard
from sparkrig.guards.garble import garble_guard
from sparkrig.guards.identity import against_verdict, outputs_of
from sparkrig.guards.kv_integrity import kv_integrity_guard
from sparkrig.guards.load_accuracy import load_accuracy_guard
from sparkrig.guards.margin import margin_guard
from sparkrig.guards.needle import needle_guard
from sparkrig.guards.receipt import CheckReceipt, save_check_receipt
from sparkrig.guards.server_shape import context_tokens
from sparkrig.guards.stop_in_reasoning import stop_in_reasoning_guard
from sparkrig.guards.stream_parity import stream_parity_guard
from sparkrig.guards.structured import structured_guard
from sparkrig.guards.verdict import GuardResult
from sparkrig.launch.state import recorded_boot, recorded_engine_build
from sparkrig.registry import Registry


@dataclass(frozen=True)
class GuardEntry:
    number: int
    name: str
    run: GuardFunction
    quick: bool
    what: str
    opening: GuardFunction | None = None  # run when the battery opens, before any guard


GUARDS: Final[Registry[GuardEntry]] = Registry("guard")
# the battery runs in this order, and the numbers are the ones receipts and docs quote (drift
# runs last, after every other guard's load)
for _entry in (
    GuardEntry(1, "exact", exact_guard, True, "count to N and fixed answers vs the baseline"),
    GuardEntry(
        2,
        "determinism",
        determinism_guard,
        True,
        "temperature 0 alone vs concurrent/staggered/mixed/cached/again",
    ),
    GuardEntry(
        3,
        "kv_integrity",
        kv_integrity_guard,
        False,
        "a fact per KV block, 3+ documents in flight, read back",
    ),
    GuardEntry(
        4,
        "margin",
        margin_guard,
        False,
        "sharp top-1 alone and with a neighbour, streamed and whole, completions and chat",
    ),
    GuardEntry(5, "needle", needle_guard, False, "needle at 0.1/0.5/0.9 up the length ladder"),
    GuardEntry(6, "stream_parity", stream_parity_guard, True, "streamed = non-streamed"),
    GuardEntry(
        7,
        "stop_in_reasoning",
        stop_in_reasoning_guard,
        False,
        "a stop string in the reasoning must not eat the answer",
    ),
    GuardEntry(8, "structured", structured_guard, True, "JSON schema, prompt JSON, tool calls"),
    GuardEntry(9, "garble", garble_guard, True, "cold concurrent prompts through the detectors"),
    GuardEntry(10, "acceptance", acceptance_guard, False, "spec-decode acceptance vs baseline"),
    GuardEntry(
        11,
        "load_accuracy",
        load_accuracy_guard,
        False,
        "items with exact answers alone vs at c = N, paired interval on the drop",
    ),
    GuardEntry(
        12,
        "drift",
        drift_guard,
        True,
        "greedy probes at the end (and each soak repeat) vs the same at the start",
        opening=drift_opening,
    ),
    GuardEntry(
        13,
        "consistency",
        consistency_guard,
        True,
        "every reply agrees with itself: its logprobs, its top list, its counts",
    ),
):
    GUARDS.add(_entry.name, _entry)
GUARD_NAMES: Final = tuple(GUARDS.names())


def guard_names(text: str | None, quick: bool) -> list[str] | None:
    """`--guard margin,needle` as guard names, each checked before any engine starts; None
    without it (the battery, or its quick part, runs)."""
    names = [name.strip() for name in text.split(",") if name.strip()] if text else None
    choose_guards(names, quick)
    return names


def choose_guards(names: list[str] | None, quick: bool) -> list[GuardEntry]:
    if names:
        GUARDS.check(names)
        return [entry for entry in GUARDS.entries() if entry.name in names]  # battery order
    return [entry for entry in GUARDS.entries() if entry.quick or not quick]


async def run_battery(
    base_url: str,
    *,
    settings: CheckSettings,
    out_path: Path,
    guards: list[str] | None = None,
    model: str | None = None,
    api_key: str | None = None,
    baseline_path: Path | None = None,
    baseline_scope: str | None = None,
    record_baseline: bool = False,
    on_result: Callable[[GuardResult], None] = lambda _: None,
    reraise: bool = False,
    openings: dict[str, Any] | None = None,
    against: tuple[Path, CheckReceipt] | None = None,
) -> CheckReceipt:
    """Run the chosen guards in order, after the openings of those that have one. `openings`
    receives what the openings took (the soak compares its repeats with it). With `against`
    (an earlier build's receipt and its path), the replies the guards keep are compared with
    its replies, as one more result."""
    chosen = choose_guards(guards, settings.quick)
    async with EndpointClient(base_url, api_key=api_key) as client:
        model_id = model or await first_model_id(client)
        # the scope names the server; the embedded engine's port changes every start
        scope = baseline_scope or client.base_url
        path = baseline_path or default_baseline_path(scope, model_id)
        snapshot = await try_scrape_metrics(client)
        baseline = load_baseline(path, model_id)
        receipt = CheckReceipt(
            base_url=client.base_url,
            model=model_id,
            settings=settings,
            engine=snapshot.engine if snapshot else None,
            baseline_path=str(path),
            guards=[entry.name for entry in chosen],
            recorded_baseline=record_baseline,
            engine_build=recorded_engine_build(client.base_url),
            startup=recorded_boot(client.base_url),
            against=None if against is None else str(against[0]),
        )
        if receipt.startup is None or not receipt.startup.kv_pool_tokens:
            receipt.kv_pool = await read_kv_pool(client, snapshot)
        if against is not None:
            same_server_kind(against[0], against[1], receipt)
        save_check_receipt(receipt, out_path)
        context = GuardContext(client, model_id, settings, baseline, record_baseline)
        context.server_context = await context_tokens(context)
        if openings is not None:
            context.openings = openings
        for entry in chosen:
            if entry.opening is not None:
                await run_opening(entry, context, reraise=reraise)
        for entry in chosen:
            result = await run_guard(entry, context, reraise=reraise)
            receipt.results.append(result)
            save_check_receipt(receipt, out_path)
            on_result(result)
        if against is not None:
            previous = outputs_of(against[1].results)
            result = against_verdict(previous, outputs_of(receipt.results), str(against[0]))
            receipt.results.append(result)
            save_check_receipt(receipt, out_path)
            on_result(result)
        if record_baseline:
            baseline.engine = receipt.engine
            save_baseline(baseline, path)
        receipt.complete = True
        receipt.measured = any(result.verdict != "SKIP" for result in receipt.results)
        save_check_receipt(receipt, out_path)
    return receipt


async def run_opening(entry: GuardEntry, context: GuardContext, *, reraise: bool) -> None:
    """An opening that raised leaves the error, a string, where its result would be: the
    guard fails with it rather than take its first look late."""
    assert entry.opening is not None
    try:
        await entry.opening(context)
    except Exception as exc:
        if reraise:
            raise
        context.openings[entry.name] = (
            f"its opening raised {exc.__class__.__name__}: {exc} — an unexpected reply or a "
            "sparkrig bug; rerun with --debug for the traceback"
        )


async def run_guard(entry: GuardEntry, context: GuardContext, *, reraise: bool) -> GuardResult:
    started = time.perf_counter()
    try:
        result: GuardResult = await entry.run(context)
    except Exception as exc:
        if reraise:
            raise
        result = GuardResult(
            guard=entry.name,
            verdict="FAIL",
            evidence=f"the guard itself raised {exc.__class__.__name__}: {exc} — an unexpected "
            "reply or a sparkrig bug; rerun with --debug for the traceback",
        )
    result.seconds = time.perf_counter() - started
    return result


def same_server_kind(path: Path, previous: CheckReceipt, receipt: CheckReceipt) -> None:
    """An earlier build's receipt compares only for the same model on the same engine."""
    if previous.model != receipt.model:
        raise UsageError(
            f"--against {path} checked model {previous.model}, this server serves "
            f"{receipt.model} — compare receipts of the same model (pass --model)"
        )
    if previous.engine and receipt.engine and previous.engine != receipt.engine:
        raise UsageError(
            f"--against {path} checked a {previous.engine} server, this one is "
            f"{receipt.engine} — compare builds of one engine"
        )
