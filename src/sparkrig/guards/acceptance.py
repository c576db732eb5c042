"""Guard 10, acceptance canary: speculative-decoding acceptance on a fixed prompt, from
/metrics deltas, within a band of the baseline, overall and at every draft position. A broken
draft loader dropped acceptance from 60.2% to 25.7% and roughly halved decode speed (55.4 to
32.7 tok/s) while the output stayed correct, so only the counters show it
(docs/field-notes.md#draft-loader-12-tensors). A draft can also fail at its later positions
only — positions 2–5 at 0.000 (docs/field-notes.md#hash-bursts-acceptance-collapse) — where a
mean over positions can hold while a position collapses."""

from __future__ import annotations

from typing import Final

from sparkrig import defaults
from sparkrig.client.metrics import accepted_per_position, metrics_delta, try_scrape_metrics
from sparkrig.engines.metric_map import Quantity
from sparkrig.guards.context import GuardContext
from sparkrig.guards.verdict import GuardResult, failed, passed, skipped

NAME: Final = "acceptance"
PROMPT: Final = "Count from 1 to 60, separated by commas."
REPLY_TOKENS: Final = 128
RUNS: Final = 2
PER_POSITION: Final = "acceptance_per_position"  # the baseline's key for the position rates


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
    drafts = delta.values.get(Quantity.SPEC_DRAFTS)
    positions = (
        [count / drafts for count in accepted_per_position([delta]).values()]
        if isinstance(drafts, float | int) and drafts
        else []
    )
    details = {
        "acceptance": rate,
        "drafted": drafted,
        "accepted": accepted,
        "per_position": positions,
        "band": defaults.CHECK_ACCEPTANCE_BAND,
    }
    if context.record_baseline:
        context.baseline.scores[NAME] = rate
        context.baseline.scores[PER_POSITION] = positions
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
    if abs(rate - reference) > defaults.CHECK_ACCEPTANCE_BAND:
        return failed(
            NAME,
            f"acceptance {rate:.1%} vs baseline {reference:.1%}: outside ±"
            f"{defaults.CHECK_ACCEPTANCE_BAND:.0%} — check the draft model or MTP head "
            "loaded (a broken draft load took it from 60.2% to 25.7%: "
            "docs/field-notes.md#draft-loader-12-tensors)",
            **details,
        )
    reference_positions = _reference_positions(context.baseline.scores.get(PER_POSITION))
    fallen = position_fall(reference_positions, positions)
    if fallen is not None:
        index, was, now = fallen
        return failed(
            NAME,
            f"draft position {index + 1} accepts {now:.3f} of drafts vs {was:.3f} in the baseline "
            f"(more than {defaults.CHECK_ACCEPTANCE_BAND:.2f} lower) while the mean holds "
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


def position_fall(reference: list[float], current: list[float]) -> tuple[int, float, float] | None:
    """The first draft position whose acceptance fell more than the band below the baseline's:
    (index, baseline rate, current rate). A position the baseline accepted less often than the
    band cannot fall by more and is not judged; a position the server no longer reports reads 0."""
    band = defaults.CHECK_ACCEPTANCE_BAND
    for index, was in enumerate(reference):
        now = current[index] if index < len(current) else 0.0
        if was >= band and was - now > band:
            return index, was, now
    return None


def _reference_positions(value: object) -> list[float]:
    """The baseline's per-position rates (a list of numbers we wrote), or [] when absent."""
    if not isinstance(value, list):
        return []
    return [item for item in value if isinstance(item, float | int) and not isinstance(item, bool)]


def _rates(rates: list[float]) -> str:
    return "/".join(f"{rate:.3f}" for rate in rates) if rates else "not reported"
