"""Run the chosen suites against one endpoint, saving the receipt after every sample."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from sparkrig.bench.accounting import CountText, server_text_counter
from sparkrig.bench.arrivals import ScheduledSender
from sparkrig.bench.client_shards import SendAll, ShardedSender, send_in_process
from sparkrig.bench.idle_gap import idle_gap, idle_warning, note_activity
from sparkrig.bench.point import BenchSettings, measure_point
from sparkrig.bench.point_result import PointResult
from sparkrig.bench.prefill_text import prefill_prompts
from sparkrig.bench.receipt import BenchReceipt, save_receipt
from sparkrig.bench.steady_warmup import steady_warmup
from sparkrig.bench.suites import SUITES, SuiteContext, planned_points
from sparkrig.bench.workloads import filler_text
from sparkrig.client import EndpointClient
from sparkrig.client.live_kv_pool import read_kv_pool
from sparkrig.client.metrics import try_scrape_metrics
from sparkrig.client.probe import first_model_id
from sparkrig.client.tokenize import server_tokenize
from sparkrig.detectors.text import degeneration_findings
from sparkrig.engines.metric_map import Quantity
from sparkrig.errors import EndpointError, UsageError, excerpt
from sparkrig.launch.state import recorded_boot, recorded_engine_build


def check_suites(names: list[str]) -> list[str]:
    if not names:
        raise UsageError(f"no suite named — choose from {SUITES.known()}")
    return SUITES.check(names)


async def _suite_context(
    client: EndpointClient,
    model: str,
    settings: BenchSettings,
    suite: str,
    receipt: BenchReceipt,
) -> SuiteContext:
    """A suite's context. The prefill suite's prompts are cut from the text --prefill-text
    names (bench/prefill_text.py); the concurrency suite's, and the prefill suite's where that
    cut cannot be made, from the server's tokens of a filler text."""
    context = SuiteContext(model=model, settings=settings)
    lengths = {
        "prefill": settings.prefill_depths,
        "concurrency": [settings.prompt_tokens],
        "max-load": [settings.prompt_tokens],
    }
    if suite not in lengths:
        return context
    if suite == "prefill":
        context.prefill = await prefill_prompts(client, model, settings)
        if context.prefill.cuts:
            return context
    deepest = max(lengths[suite])
    context.filler_text = filler_text(deepest * 2)
    try:
        tokens = await server_tokenize(client, model, context.filler_text)
    except EndpointError as exc:
        _fell_back(context, receipt, token_ids=False)
        if context.prefill is None:  # the prefill note already names the failure
            receipt.warnings.append(f"{suite}: {exc}")
        return context
    if len(tokens) < deepest:
        receipt.warnings.append(
            f"{suite}: the filler text has only {len(tokens)} tokens, under the {deepest} asked"
        )
    context.filler_tokens = tokens
    _fell_back(context, receipt, token_ids=True)
    return context


def _fell_back(context: SuiteContext, receipt: BenchReceipt, *, token_ids: bool) -> None:
    """The prefill text could not be cut: its points say which fallback, and so does the
    receipt."""
    if context.prefill is not None:
        context.prefill = context.prefill.fell_back(token_ids=token_ids)
        receipt.warnings.append(context.prefill.note)


async def text_counter(
    client: EndpointClient, model: str, receipt: BenchReceipt
) -> CountText | None:
    """The server's tokenizer, to check every completion count against its text; None (and a
    warning on the receipt) when the server has no /tokenize."""
    try:
        await server_tokenize(client, model, "a probe")
    except EndpointError as exc:
        receipt.warnings.append(
            f"completion counts are checked against max_tokens and /metrics only, not the "
            f"text: {exc}"
        )
        return None
    return server_text_counter(client, model)


def degeneration_messages(text: str) -> list[str]:
    return [f"{finding.detector}: {finding.message}" for finding in degeneration_findings(text)]


@dataclass
class BenchSide:
    """One server of a run: its client, receipt and where it is saved."""

    client: EndpointClient
    receipt: BenchReceipt
    out_path: Path
    contexts: dict[str, SuiteContext]
    count_text: CountText | None
    send_all: SendAll | None = None  # None: every stream from this process

    def planned(self) -> int:
        return sum(planned_points(s, c) for s, c in self.contexts.items())


async def open_side(
    client: EndpointClient,
    *,
    suites: list[str],
    settings: BenchSettings,
    out_path: Path,
    model: str | None,
    continue_receipt: BenchReceipt | None = None,
    send_all: SendAll | None = None,
) -> BenchSide:
    """The receipt (saved at once), suite contexts and text counter of one server."""
    model_id = model or await first_model_id(client)
    receipt = continue_receipt or BenchReceipt(
        base_url=client.base_url, model=model_id, suites=suites, settings=settings
    )
    receipt.complete = False
    receipt.engine_build = receipt.engine_build or recorded_engine_build(client.base_url)
    receipt.startup = receipt.startup or recorded_boot(client.base_url)
    receipt.suites += [name for name in suites if name not in receipt.suites]
    snapshot = await try_scrape_metrics(client)
    if receipt.idle_before is None:
        receipt.idle_before = idle_gap(client.base_url, snapshot)
        warning = idle_warning(receipt.idle_before, settings.warmup_steady)
        if warning is not None:
            receipt.warnings.append(warning)
    if receipt.kv_pool is None and (receipt.startup is None or not receipt.startup.kv_pool_tokens):
        receipt.kv_pool = await read_kv_pool(client, snapshot)
    if snapshot is not None:
        receipt.engine = snapshot.engine
    else:
        receipt.warnings.append(
            "no /metrics: idle waits, foreign-traffic checks and server counters are off"
        )
    if "spec" in suites and (snapshot is None or snapshot.read(Quantity.SPEC_DRAFTS) is None):
        receipt.warnings.append(
            "spec suite skipped: the server exposes no speculative-decoding counters — "
            "start it with speculative decoding (e.g. `--spec-type draft-simple`)"
        )
        suites = [name for name in suites if name != "spec"]
    save_receipt(receipt, out_path)
    contexts = {
        suite: await _suite_context(client, model_id, settings, suite, receipt) for suite in suites
    }
    count_text = await text_counter(client, model_id, receipt)
    if settings.warmup_steady and receipt.steady_warmup is None:
        receipt.steady_warmup = await steady_warmup(client, model_id, settings)
        if not receipt.steady_warmup.steady:
            receipt.warnings.append(receipt.steady_warmup.note)
        save_receipt(receipt, out_path)
    return BenchSide(client, receipt, out_path, contexts, count_text, send_all)


async def measure_round(
    side: BenchSide,
    round_index: int,
    on_progress: Callable[[PointResult], None],
    on_point_done: Callable[[PointResult], None],
) -> bool:
    def saved(point: PointResult) -> None:
        save_receipt(side.receipt, side.out_path)
        on_progress(point)

    return await _run_round(
        side.client,
        side.receipt,
        side.contexts,
        round_index,
        saved=saved,
        on_point_done=on_point_done,
        count_text=side.count_text,
        send_all=side.send_all,
    )


async def run_bench(
    base_url: str,
    *,
    suites: list[str],
    settings: BenchSettings,
    out_path: Path,
    model: str | None = None,
    api_key: str | None = None,
    on_progress: Callable[[PointResult], None] = lambda _: None,
    on_plan: Callable[[int], None] = lambda _: None,
    on_point_done: Callable[[PointResult], None] = lambda _: None,
    continue_receipt: BenchReceipt | None = None,
) -> BenchReceipt:
    """Run `suites` and return the receipt; with `continue_receipt`, append to that one (its
    other suites ran on another engine, e.g. the embedded engine restarted for speculation)."""
    check_suites(suites)
    async with (
        EndpointClient(base_url, api_key=api_key) as client,
        ShardedSender(client, api_key=api_key, forced=settings.client_processes) as send_all,
    ):
        side = await open_side(
            client,
            suites=suites,
            settings=settings,
            out_path=out_path,
            model=model,
            continue_receipt=continue_receipt,
            send_all=send_all,
        )
        on_plan(settings.rounds * side.planned())
        for round_index in range(1, settings.rounds + 1):
            if not await measure_round(side, round_index, on_progress, on_point_done):
                break
        side.receipt.warnings += [w for w in send_all.warnings if w not in side.receipt.warnings]
        side.receipt.close()
        save_receipt(side.receipt, out_path)
        note_activity(client.base_url, await try_scrape_metrics(client))
    return side.receipt


async def _run_round(
    client: EndpointClient,
    receipt: BenchReceipt,
    contexts: dict[str, SuiteContext],
    round_index: int,
    *,
    saved: Callable[[PointResult], None],
    on_point_done: Callable[[PointResult], None],
    count_text: CountText | None,
    send_all: SendAll | None = None,
) -> bool:
    """One pass over every point of the suites; later rounds add samples to the same points.

    False when the run should stop: a point ended without a sample and nothing has been measured
    yet, so the server is not answering usably and the other points would only wait on it."""
    for suite, context in contexts.items():
        for plan in SUITES.get(suite)(context):
            point = _point_named(receipt, plan.point)
            sender: SendAll | None = send_all
            if plan.sender is not None:
                sender = plan.sender(client)
            elif plan.schedule is not None:
                sender = ScheduledSender(
                    send_all or partial(send_in_process, client), plan.schedule
                )
            await measure_point(
                client,
                point,
                make_requests=plan.make_requests,
                value_of=plan.value_of,
                settings=receipt.settings,
                check_text=degeneration_messages,
                on_sample=saved,
                round_index=round_index,
                count_text=count_text,
                send_all=sender,
                at_once=plan.at_once,
            )
            if suite == "max-load":  # an interrupted search keeps its answer so far
                receipt.judge_max_load()
                saved(point)
            on_point_done(point)
            if not any(p.samples for p in receipt.points):
                last = point.discarded[-1].reason if point.discarded else "no sample"
                receipt.warnings.append(
                    f"stopped at {suite}/{point.name}: its first point gave no sample "
                    f"({excerpt(last, 160)}), so the others would only repeat it"
                )
                return False
            if suite == "spec" and point.spec is None:
                message = (
                    "spec suite stopped: the server made no drafts — speculative decoding is off "
                    "on it (start it with e.g. `--spec-type draft-simple`)"
                )
                if message not in receipt.warnings:
                    receipt.warnings.append(message)
                break
    return True


def _point_named(receipt: BenchReceipt, fresh: PointResult) -> PointResult:
    """The receipt's point of that suite and name (from an earlier round), or `fresh` added."""
    for point in receipt.points:
        if (point.suite, point.name) == (fresh.suite, fresh.name):
            return point
    receipt.points.append(fresh)
    return fresh
