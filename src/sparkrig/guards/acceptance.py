"""Guard 10, acceptance canary: speculative-decoding acceptance on a fixed prompt, from
/metrics deltas, within a band of the baseline, overall and at every draft position. A broken
draft loader dropped acceptance from 60.2% to 25.7% and roughly halved decode speed (55.4 to
32.7 tok/s) while the output stayed correct, so only the counters show it
(docs/field-notes.md#draft-loader-12-tensors). A draft can also fail at its later positions
only — positions 2–5 at 0.000 (docs/field-notes.md#hash-bursts-acceptance-collapse) — where a
mean over positions can hold while a position collapses.

Acceptance is a proportion over a few dozen drafts, so an honest engine that samples its drafts
(or llama.cpp's synthetic rates) wobbles by more than the band between two runs: measured 43–52%
over eight runs of one server, a position 0.13 apart. Each comparison therefore allows the larger
of the band and CHECK_ACCEPTANCE_SIGMAS standard errors of the two samples (drafts counted as
the trials, which overstates none of the evidence); the field faults (60.2% to 25.7%, positions
to 0.000) sit far outside both."""

from __future__ import annotations

import math
from typing import Final

from sparkrig import defaults
from sparkrig.client.metrics import accepted_per_position, metrics_delta, try_scrape_metrics
from sparkrig.engines.metric_map import Quantity
from sparkrig.guards.context import GuardContext
from sparkrig.guards.verdict import GuardResult, failed, passed, skipped
from sparkrig.outside_numbers import number_or_none

NAME: Final = "acceptance"
PROMPT: Final = "Count from 1 to 60, separated by commas."
REPLY_TOKENS: Final = 128
RUNS: Final = 4
PER_POSITION: Final = "acceptance_per_position"  # the baseline's key for the position rates
DRAFTS: Final = "acceptance_drafts"  # the baseline's key for how many drafts it counted


async def acceptance_guard(context: GuardContext) -> GuardResult:
    before = await try_scrape_metrics(context.client)
    if before is None or before.read(Quantity.SPEC_DRAFT_TOKENS) is None:
        return skipped(NAME, "the server exposes no speculative-decoding counters in /metrics")
    for _ in range(RUNS):
        record = await context.send(context.chat(PROMPT, max_tokens=REPLY_TOKENS))
        if record.error is not None:
            return failed(NAME, f"the canary request failed: {record.error.message}")
    after = await try_scrape_metrics(context.client)
    if after is None:
        return failed(NAME, "/metrics stopped answering during the canary")
    delta = metrics_delta(before, after)
    drafted = delta.values.get(Quantity.SPEC_DRAFT_TOKENS)
    accepted = delta.values.get(Quantity.SPEC_ACCEPTED_TOKENS)
    if not isinstance(drafted, float | int) or not isinstance(accepted, float | int) or not drafted:
        return skipped(NAME, "no drafts were made on the canary prompt: speculation is off")
    rate = accepted / drafted
    draft_count = _count(delta.values.get(Quantity.SPEC_DRAFTS))
    positions = (
        [count / draft_count for count in accepted_per_position([delta]).values()]
        if draft_count
        else []
    )
    details = {
        "acceptance": rate,
        "drafted": drafted,
        "accepted": accepted,
        "per_position": positions,
        "drafts": draft_count,
        "band": defaults.CHECK_ACCEPTANCE_BAND,
    }
    if context.record_baseline:
        context.baseline.scores[NAME] = rate
        context.baseline.scores[PER_POSITION] = positions
        context.baseline.scores[DRAFTS] = draft_count
        return passed(
            NAME,
            f"baseline recorded: acceptance {rate:.1%}, by position {_rates(positions)}",
            **details,
        )
    reference = context.baseline.scores.get(NAME)
    if reference is None:
        return skipped(
            NAME,
            f"acceptance {rate:.1%}, but no baseline to judge against — record "
            "one with --record-baseline",
            **details,
        )
    reference_drafts = _count(context.baseline.scores.get(DRAFTS))
    mean_band = tolerance(reference, reference_drafts, rate, draft_count)
    if abs(rate - reference) > mean_band:
        return failed(
            NAME,
            f"acceptance {rate:.1%} vs baseline {reference:.1%}: outside ±"
            f"{mean_band:.1%} — check the draft model or MTP head "
            "loaded (a broken draft load took it from 60.2% to 25.7%: "
            "docs/field-notes.md#draft-loader-12-tensors)",
            **details,
        )
    reference_positions = _reference_positions(context.baseline.scores.get(PER_POSITION))
    fallen = position_fall(reference_positions, positions, reference_drafts, draft_count)
    if fallen is not None:
        index, was, now, allowed = fallen
        return failed(
            NAME,
            f"draft position {index + 1} accepts {now:.3f} of drafts vs {was:.3f} in the baseline "
            f"(more than {allowed:.2f} lower) while the mean holds "
            f"({rate:.1%} vs {reference:.1%}) — the draft's later positions no longer agree with "
            "the target: check the draft model or MTP head and the KV-cache dtype (positions 2–5 "
            "fell to 0.000 on a broken cache: docs/field-notes.md#hash-bursts-acceptance-collapse)",
            **details,
        )
    by_position = (
        f"; by position {_rates(positions)} vs {_rates(reference_positions)}"
        if reference_positions
        else "; no per-position baseline (recorded before positions were kept): mean only"
    )
    return passed(NAME, f"acceptance {rate:.1%}, baseline {reference:.1%}{by_position}", **details)


def tolerance(was: float, was_drafts: float, now: float, now_drafts: float) -> float:
    """How far apart two acceptance rates may be: the band, or CHECK_ACCEPTANCE_SIGMAS standard
    errors of their difference when the two samples are small enough for that to be wider. An
    unknown sample size (a baseline recorded before drafts were counted) leaves the band."""
    if was_drafts <= 0 or now_drafts <= 0:
        return defaults.CHECK_ACCEPTANCE_BAND
    variance = _binomial(was) / was_drafts + _binomial(now) / now_drafts
    spread = defaults.CHECK_ACCEPTANCE_SIGMAS * math.sqrt(variance)
    return max(defaults.CHECK_ACCEPTANCE_BAND, spread)


def position_fall(
    reference: list[float],
    current: list[float],
    reference_drafts: float = 0.0,
    current_drafts: float = 0.0,
) -> tuple[int, float, float, float] | None:
    """The first draft position whose acceptance fell further below the baseline's than
    `tolerance` allows: (index, baseline rate, current rate, allowed fall). A position the
    baseline accepted less often than the band cannot fall by more and is not judged; a
    position the server no longer reports reads 0."""
    for index, was in enumerate(reference):
        now = current[index] if index < len(current) else 0.0
        allowed = tolerance(was, reference_drafts, now, current_drafts)
        if was >= defaults.CHECK_ACCEPTANCE_BAND and was - now > allowed:
            return index, was, now, allowed
    return None


def _binomial(rate: float) -> float:
    clipped = min(max(rate, 0.0), 1.0)
    return clipped * (1.0 - clipped)


def _count(value: object) -> float:
    """A positive count (of drafts, from /metrics or the baseline), or 0 when absent or not a
    number."""
    number = number_or_none(value)
    return number if number is not None and number > 0 else 0.0


def _reference_positions(value: object) -> list[float]:
    """The baseline's per-position rates (a list of numbers we wrote), or [] when absent."""
    if not isinstance(value, list):
        return []
    return [item for item in value if isinstance(item, float | int) and not isinstance(item, bool)]


def _rates(rates: list[float]) -> str:
    return "/".join(f"{rate:.3f}" for rate in rates) if rates else "not reported"
