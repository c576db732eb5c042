"""Run a soak: `concurrency` workers send planned requests for `duration_s` (the closed loop), or
a paced replay sends each trace request once at its offset (the open loop, bench/soak_pacing.py;
the run ends when the trace's last reply is in, or at `duration_s`); every `window_s` the
window's figures and the server's restarts (from /metrics) go into the receipt, which is saved
at once. Requests finishing after a boundary count in the window they finish in. When the
upstream stops answering (consecutive connection failures), the run stops, keeps every finished
window, and says when the upstream went away."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterator, Sequence

import aiohttp

from sparkrig import defaults
from sparkrig.bench.soak_pacing import PacedReplay, pacing_summary
from sparkrig.bench.soak_receipt import LeftOutKind, SoakProblem, SoakReceipt
from sparkrig.bench.soak_traffic import PlannedRequest
from sparkrig.bench.soak_windows import Outcome, output_findings, window_figures
from sparkrig.client import EndpointClient
from sparkrig.client.metrics import MetricsSnapshot, metrics_delta, parse_metrics

# error kinds that mean the upstream itself is gone, not that one request went wrong
_TRANSPORT = frozenset(("connect", "stream_cut", "timeout"))
_START_TIME = "process_start_time_seconds"


class SoakRun:
    def __init__(
        self,
        client: EndpointClient,
        receipt: SoakReceipt,
        traffic: Iterator[PlannedRequest],
        *,
        metrics_url: str | None,
        on_window: Callable[[SoakReceipt], None],
        paced: PacedReplay | None = None,
    ) -> None:
        self.client = client
        self.paced = paced
        if paced is not None:
            receipt.pacing = pacing_summary(paced, [], [], [])
        self._origin_ns = time.perf_counter_ns()  # the paced schedule's zero, with _t0
        self._scheduled_s: list[float] = []
        self._sent_s: list[float] = []
        self._late_ms: list[float] = []
        self.receipt = receipt
        self.traffic = traffic
        self.metrics_url = metrics_url
        self.on_window = on_window
        self._t0 = time.monotonic()
        self._pending: list[Outcome] = []
        self._failures_in_a_row = 0
        self._first_failure_s: float | None = None
        self._stop = asyncio.Event()
        self._scrape: MetricsSnapshot | None = None
        self._gate = asyncio.Event()  # cleared during an idle gap
        self._gate.set()
        self._in_flight = 0
        self._idle_before: float | None = None

    def _now(self) -> float:
        return time.monotonic() - self._t0

    async def run(self) -> SoakReceipt:
        self._scrape = await self._read_metrics()
        self._t0, self._origin_ns = time.monotonic(), time.perf_counter_ns()
        if self.paced is not None:
            workers = [asyncio.create_task(self._pace(self.paced))]
        else:
            stagger = self.receipt.stagger_s or 0.0
            workers = [
                asyncio.create_task(self._worker(start_after_s=index * stagger))
                for index in range(self.receipt.concurrency)
            ]
        window_start, index = 0.0, 0
        try:
            while not self._stop.is_set():
                boundary = min(window_start + self.receipt.window_s, self.receipt.duration_s)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), max(boundary - self._now(), 0))
                if self._now() >= self.receipt.duration_s:
                    self._stop.set()
                    break
                if self._stop.is_set():
                    break
                await self._close_window(index, window_start, boundary, partial=False)
                window_start, index = boundary, index + 1
                if self.receipt.idle_gap_s:
                    window_start = await self._idle(self.receipt.idle_gap_s)
            await asyncio.gather(*workers)  # in-flight replies finish into the last window
        except BaseException:  # Ctrl-C, SIGTERM, a bug: the receipt says the run did not finish
            if self.receipt.status == "running":
                self.receipt.status = "interrupted"
            raise
        finally:
            for worker in workers:
                worker.cancel()
            end = self._now()
            cut = self.receipt.upstream_lost_at_s is not None or end < self.receipt.duration_s
            if self._pending or end > window_start:
                await self._close_window(index, window_start, end, partial=cut)
            status = self.receipt.status
            self.receipt.finish("complete" if status == "running" else status)
            self.on_window(self.receipt)
        return self.receipt

    async def _idle(self, gap_s: float) -> float:
        """Warm-state decay: let the in-flight replies finish, send nothing for `gap_s`, and
        start the next window after it (its first TTFT shows what the gap cost)."""
        self._gate.clear()
        while self._in_flight and not self._stop.is_set():  # noqa: ASYNC110
            await asyncio.sleep(0.05)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stop.wait(), gap_s)
        self._idle_before = gap_s
        self._gate.set()
        return self._now()

    async def _worker(self, start_after_s: float = 0.0) -> None:
        """One closed-loop stream; with --stagger, it joins `start_after_s` into the run."""
        if start_after_s > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), start_after_s)
        while not self._stop.is_set() and self._now() < self.receipt.duration_s:
            await self._gate.wait()
            if self._stop.is_set() or self._now() >= self.receipt.duration_s:
                break
            await self._send(next(self.traffic))

    async def _pace(self, replay: PacedReplay) -> None:
        """Each trace request at its offset, not waiting for the ones in flight; then, the
        trace done, the last replies, and the run ends."""
        sends: set[asyncio.Task[None]] = set()
        try:
            for n, offset_s in enumerate(replay.offsets_s):
                if self._stop.is_set() or offset_s >= self.receipt.duration_s:
                    break
                planned = replay.planned(n)  # built before its time, so building is not lateness
                due_ns = self._origin_ns + round(offset_s * 1e9)
                wait_s = (due_ns - time.perf_counter_ns()) / 1e9
                if wait_s > 0:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._stop.wait(), wait_s)
                    if self._stop.is_set():
                        break
                send = asyncio.create_task(self._send(planned, due_ns=due_ns))
                sends.add(send)
                send.add_done_callback(sends.discard)
            await asyncio.gather(*sends)
            self._stop.set()
        finally:
            for send in sends:
                send.cancel()

    async def _send(self, planned: PlannedRequest, due_ns: int | None = None) -> None:
        planned.request.headers["X-Request-Id"] = planned.request_id
        sent_s = self._now()
        self._in_flight += 1
        try:
            record = await self.client.send(planned.request)
        finally:
            self._in_flight -= 1
        outcome = Outcome(planned.request_id, planned.kind, self._now(), sent_s=sent_s)
        if due_ns is not None:
            outcome.late_ms = round((record.send_ns - due_ns) / 1e6, 3)
            self._late_ms.append(outcome.late_ms)
            self._scheduled_s.append((due_ns - self._origin_ns) / 1e9)
            self._sent_s.append((record.send_ns - self._origin_ns) / 1e9)
        if record.error is not None:
            outcome.error, outcome.error_kind = record.error.message, record.error.kind
            self._transport_failure(outcome)
        else:
            self._failures_in_a_row, self._first_failure_s = 0, None
            outcome.output_tokens = record.completion_tokens or 0
            outcome.decode_tps, outcome.ttft_s = record.decode_tps, record.ttft_s
            outcome.findings = output_findings(planned.kind, record)
        self._pending.append(outcome)

    def _transport_failure(self, outcome: Outcome) -> None:
        gone = outcome.error_kind in _TRANSPORT or " 502" in (outcome.error or "")
        if not gone:
            return
        self._failures_in_a_row += 1
        if self._first_failure_s is None:
            self._first_failure_s = outcome.done_s
        if self._failures_in_a_row >= max(
            defaults.SOAK_LOST_AFTER_FAILURES, self.receipt.concurrency
        ):
            self.receipt.status = "upstream_lost"
            self.receipt.upstream_lost_at_s = round(self._first_failure_s, 3)
            self.receipt.upstream_lost_message = outcome.error
            self._stop.set()

    async def _close_window(self, index: int, start: float, end: float, *, partial: bool) -> None:
        outcomes, self._pending = self._pending, []
        restarts = await self._restarts()
        window = window_figures(index, start, end, outcomes, restarts=restarts, partial=partial)
        window.idle_before_s, self._idle_before = self._idle_before, None
        self.receipt.windows.append(window)
        if self.paced is not None:
            self.receipt.pacing = pacing_summary(
                self.paced, self._scheduled_s, self._sent_s, self._late_ms
            )
        for outcome in outcomes:
            if outcome.error is not None:
                self.receipt.problems.append(
                    SoakProblem(
                        request_id=outcome.request_id,
                        kind="lost",
                        window=index,
                        at_s=round(outcome.done_s, 3),
                        message=outcome.error,
                    )
                )
            for detector, message in outcome.findings:
                self.receipt.problems.append(
                    SoakProblem(
                        request_id=outcome.request_id,
                        kind="bad_output",
                        window=index,
                        at_s=round(outcome.done_s, 3),
                        message=f"{detector}: {message}",
                    )
                )
        self.on_window(self.receipt)

    async def _restarts(self) -> int | None:
        after = await self._read_metrics()
        before, self._scrape = self._scrape, after or self._scrape
        if before is None or after is None:
            return None
        started = [s.samples.get(_START_TIME) for s in (before, after)]
        if all(started) and started[0][0].value != started[1][0].value:  # type: ignore[index]
            return 1
        return int(metrics_delta(before, after).server_restarted)

    async def _read_metrics(self) -> MetricsSnapshot | None:
        if self.metrics_url is None:
            return None
        try:
            timeout = aiohttp.ClientTimeout(total=defaults.LAUNCH_HTTP_PROBE_TIMEOUT_S)
            async with (
                aiohttp.ClientSession(timeout=timeout) as session,
                session.get(self.metrics_url) as response,
            ):
                if response.status != 200:
                    return None
                return parse_metrics(await response.text(), time.perf_counter_ns())
        except (aiohttp.ClientError, TimeoutError):
            return None


def new_receipt(
    url: str,
    model: str,
    traffic: str,
    *,
    concurrency: int,
    duration_s: float,
    window_s: float,
    seed: int,
    idle_gap_s: float | None = None,
    stagger_s: float | None = None,
    kinds: Sequence[str] | None = None,
    left_out: Sequence[LeftOutKind] = (),
) -> SoakReceipt:
    """`kinds`: what the mixed traffic cycles over (None for a replay); `left_out`: the kinds
    of the mix it does not send, and why."""
    return SoakReceipt(
        base_url=url,
        model=model,
        traffic=traffic,
        concurrency=concurrency,
        duration_s=duration_s,
        window_s=window_s,
        seed=seed,
        idle_gap_s=idle_gap_s,
        stagger_s=stagger_s,
        kinds=None if kinds is None else list(kinds),
        left_out=list(left_out),
    )
