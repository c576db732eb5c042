"""Guard 10, acceptance canary: speculative-decoding acceptance on a fixed prompt, from
/metrics deltas, within a band of the baseline. A broken draft loader dropped acceptance from
60.2% to 25.7% and roughly halved decode speed (55.4 to 32.7 tok/s) while the output stayed
correct, so only the counters show it (docs/field-notes.md#draft-loader-12-tensors)."""

from __future__ import annotations

from typing import Final

from sparkrig import defaults
from sparkrig.client.metrics import metrics_delta, try_scrape_metrics
from sparkrig.engines.metric_map import Quantity
from sparkrig.guards.context import GuardContext
from sparkrig.guards.verdict import GuardResult, failed, passed, skipped

NAME: Final = "acceptance"
PROMPT: Final = "Count from 1 to 60, separated by commas."
REPLY_TOKENS: Final = 128
RUNS: Final = 2


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
    details = {
        "acceptance": rate,
        "drafted": drafted,
        "accepted": accepted,
        "band": defaults.CHECK_ACCEPTANCE_BAND,
    }
    if context.record_baseline:
        context.baseline.scores[NAME] = rate
        return passed(NAME, f"baseline recorded: acceptance {rate:.1%}", **details)
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
    return passed(NAME, f"acceptance {rate:.1%}, baseline {reference:.1%}", **details)
