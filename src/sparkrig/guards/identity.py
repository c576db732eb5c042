"""`check --against`: this build's temperature-0 replies against an earlier build's check receipt.

A release is gated on "same outputs" (field notes: determinism-gate, release-same-outputs): every
kept reply must be identical to the earlier build's reply to the same prompt on the same path.
Where they differ, the first difference is classified as determinism classifies one (a near-tie
flip, or a defect: a confident token replaced, or no logprobs to tell), and two numbers say how
far the builds moved, over the positions where both replies were conditioned on the same text
(the shared start of the two replies, up to and including the first differing token):

- top-token agreement: the share of those positions whose chosen token is the same;
- a KL estimate: at each of those positions, KL(previous ‖ this) between the two top-k lists
  restricted to the tokens both hold, each renormalised over them, averaged over positions. It
  ignores the probability outside the shared tokens, and it is not teacher-forced: after the
  replies part, their contexts differ and nothing is compared. The report's figures (94.5%,
  0.023 nats) were teacher-forced over whole replies; these are the estimate a receipt allows.

The guards keep their replies in their details (`outputs`); this module reads an earlier
receipt's (through `load_check_receipt`) and compares the two lists, purely.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, Field, ValidationError

from sparkrig import defaults
from sparkrig.client import ChatRequest, CompletionRequest, RequestRecord
from sparkrig.client.records import TokenLogprob
from sparkrig.errors import UsageError, validation_problem
from sparkrig.guards.divergence import Divergence, first_divergence
from sparkrig.guards.receipt import CheckReceipt, load_check_receipt
from sparkrig.guards.verdict import GuardResult, failed, passed, warned

NAME: Final = "against"


class KeptOutput(BaseModel):
    """One temperature-0 reply a guard keeps in its details for a later `check --against`."""

    guard: str
    prompt: str
    api: Literal["chat", "completions"] = Field(
        default="chat",
        description="the endpoint that answered (receipts from before it was kept: chat)",
    )
    stream: bool
    max_tokens: int | None = Field(
        description="the reply's token budget: a shorter budget's reply is a prefix, not a change"
    )
    content: str
    logprobs: list[TokenLogprob] = Field(default_factory=list)

    @property
    def key(self) -> OutputKey:
        return self.guard, self.prompt, self.api, self.stream, self.max_tokens


OutputKey = tuple[str, str, str, bool, int | None]


def kept(
    guard: str, prompt: str, request: ChatRequest | CompletionRequest, record: RequestRecord
) -> dict[str, Any]:
    """The JSON a guard puts in `details["outputs"]` for one reply."""
    output = KeptOutput(
        guard=guard,
        prompt=prompt,
        api=request.api,
        stream=record.stream,
        max_tokens=request.max_tokens,
        content=record.content,
        logprobs=record.logprobs,
    )
    return output.model_dump(mode="json")


def outputs_of(results: Iterable[Any]) -> dict[OutputKey, KeptOutput]:
    """Every kept reply of a receipt's results (GuardResult), by guard, prompt and path."""
    found: dict[OutputKey, KeptOutput] = {}
    for result in results:
        for raw in result.details.get("outputs") or []:
            output = KeptOutput.model_validate(raw)
            found[output.key] = output
    return found


def _record(output: KeptOutput) -> RequestRecord:
    return RequestRecord(
        url="",
        api=output.api,
        stream=output.stream,
        model="",
        send_ns=0,
        content=output.content,
        logprobs=output.logprobs,
    )


class Compared(BaseModel):
    guard: str
    prompt: str
    api: Literal["chat", "completions"] = "chat"
    stream: bool
    text: Divergence
    positions: int = Field(description="positions with a chosen token on both sides compared")
    agreeing: int = Field(description="of them, how many chose the same token")
    kl_positions: int = Field(default=0, description="positions with a KL estimate")
    kl_sum_nats: float = 0.0


def shared_top_kl(previous: TokenLogprob, current: TokenLogprob) -> float | None:
    """KL(previous ‖ current) over the tokens both top lists hold, each renormalised over them;
    None when they share fewer than two tokens (one shared token always reads 0)."""
    ours = {top.token: top.logprob for top in previous.top}
    theirs = {top.token: top.logprob for top in current.top}
    shared = [token for token in ours if token in theirs]
    if len(shared) < 2:  # one shared token renormalises to certainty on both sides
        return None
    p = _normalised([ours[token] for token in shared])
    q = _normalised([theirs[token] for token in shared])
    return sum(a * math.log(a / b) for a, b in zip(p, q, strict=True) if a > 0)


def _normalised(logprobs: list[float]) -> list[float]:
    top = max(logprobs)
    weights = [math.exp(lp - top) for lp in logprobs]
    total = sum(weights)
    return [max(w / total, 1e-300) for w in weights]


def compare_one(previous: KeptOutput, current: KeptOutput) -> Compared:
    text = first_divergence(_record(previous), _record(current))
    positions = agreeing = kl_positions = 0
    kl_sum = 0.0
    for a, b in zip(previous.logprobs, current.logprobs, strict=False):
        positions += 1
        if (kl := shared_top_kl(a, b)) is not None:
            kl_positions += 1
            kl_sum += kl
        if a.token != b.token:
            break  # the contexts differ from here on
        agreeing += 1
    return Compared(
        guard=current.guard,
        prompt=current.prompt,
        api=current.api,
        stream=current.stream,
        text=text,
        positions=positions,
        agreeing=agreeing,
        kl_positions=kl_positions,
        kl_sum_nats=kl_sum,
    )


def against_verdict(
    previous: dict[OutputKey, KeptOutput],
    current: dict[OutputKey, KeptOutput],
    previous_path: str,
    min_agreement: float = defaults.CHECK_AGAINST_MIN_TOP_TOKEN_AGREEMENT,
    max_kl_nats: float = defaults.CHECK_AGAINST_MAX_KL_NATS,
) -> GuardResult:
    """PASS when every shared reply is identical; WARN when they differ only at near-ties and
    agreement and KL stay within the thresholds; FAIL on a defect or beyond a threshold."""
    shared = [key for key in current if key in previous]
    unmatched = sorted({key[0] for key in previous if key not in current})
    details: dict[str, Any] = {
        "previous": previous_path,
        "min_agreement": min_agreement,
        "max_kl_nats": max_kl_nats,
        "not_compared_guards": unmatched,
    }
    if not shared:
        kept_by = sorted({key[0] for key in previous}) or ["none"]
        return failed(
            NAME,
            f"no reply to compare with {previous_path}: it keeps replies of "
            f"{', '.join(kept_by)}, this run of {', '.join(sorted({k[0] for k in current}))} — "
            "run the same guards (exact, determinism, load_accuracy keep their replies)",
            **details,
        )
    rows = [compare_one(previous[key], current[key]) for key in shared]
    details["compared"] = [row.model_dump(exclude_defaults=True) for row in rows]
    positions = sum(row.positions for row in rows)
    agreement = sum(row.agreeing for row in rows) / positions if positions else None
    kl_positions = sum(row.kl_positions for row in rows)
    kl = sum(row.kl_sum_nats for row in rows) / kl_positions if kl_positions else None
    details.update(top_token_agreement=agreement, kl_nats=kl)
    identical = sum(row.text.kind == "identical" for row in rows)
    summary = (
        f"{identical}/{len(rows)} replies identical to {previous_path}; top-token agreement "
        + ("n/a (no logprobs)" if agreement is None else f"{agreement:.1%}")
        + f" (at least {min_agreement:.0%}), KL "
        + ("n/a" if kl is None else f"{kl:.4f} nats")
        + f" (at most {max_kl_nats})"
    )
    for row in rows:
        if row.text.kind == "defect":
            path = f"{row.api}, {'streamed' if row.stream else 'non-streamed'}"
            return failed(
                NAME,
                f"{summary}; {row.guard} {row.prompt[:50]!r} ({path}) changed at char "
                f"{row.text.char_offset}: {row.text.reference_excerpt!r} → "
                f"{row.text.candidate_excerpt!r}",
                **details,
            )
    if agreement is not None and agreement < min_agreement:
        return failed(NAME, f"{summary}: agreement below the threshold", **details)
    if kl is not None and kl > max_kl_nats:
        return failed(NAME, f"{summary}: KL above the threshold", **details)
    if identical == len(rows):
        return passed(NAME, summary, **details)
    return warned(NAME, f"{summary}; the others differ at near-ties only", **details)


def load_previous_receipt(path: Path) -> CheckReceipt:
    """An earlier build's receipt for `check --against`: `load_check_receipt`'s one-line errors,
    and one for a receipt that kept no replies (written before sparkrig kept them, or by a run
    of guards that keep none), before anything runs."""
    receipt = load_check_receipt(path)
    try:
        outputs = outputs_of(receipt.results)
    except ValidationError as exc:
        raise UsageError(
            f"{path} is a damaged check receipt (a kept reply: {validation_problem(exc)}) — "
            "rerun `sparkrig check` on the earlier build"
        ) from exc
    if not outputs:
        raise UsageError(
            f"{path} keeps no replies to compare with (a receipt of sparkrig "
            f"{receipt.sparkrig_version or '(version not recorded)'}, guards "
            f"{', '.join(receipt.guards) or 'none'}; exact, determinism and load_accuracy keep "
            "theirs since --against exists) — rerun `sparkrig check` with this version on the "
            "earlier build"
        )
    return receipt
