"""`bench --prefill-text corpus|filler`: the text the prefill suite's prompts are cut from, and
what each prefill point's receipt says about its prompt.

corpus, the default, is the bundled real text, sparkrig's own code and docs (bench/corpus/);
filler is the generated template line (bench/workloads.py). Content changes prefill cost: a
one-token filler prefilled 6,866 tok/s at 32K where real source text prefilled 5,982 on the same
machines (docs/field-notes.md#prefill-filler-content). Either text is cut at exact depths through
the server's /tokenize and /detokenize (bench/depth_cut.py). Where the cut cannot be made, the
suite does what it did before and the receipt says why: the filler's token ids (exact lengths,
when /tokenize answers but the cut fails), or the filler at an estimated
BENCH_CHARS_PER_TOKEN_ESTIMATE characters a token (no /tokenize).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

from pydantic import BaseModel, Field

from sparkrig import defaults
from sparkrig.bench.corpus import CORPUS_SOURCE, corpus_sha256, corpus_text
from sparkrig.bench.depth_cut import DepthPrompts, ServerTokenizer, cut_depths
from sparkrig.bench.settings import BenchSettings, PrefillTextKind
from sparkrig.bench.workloads import filler_text
from sparkrig.client import EndpointClient
from sparkrig.errors import EndpointError

CutMethod = Literal["cut, re-tokenized", "token ids", "estimated"]
FILLER_SOURCE = (
    "generated: 'Line i notes that crate j holds k apples.' with i counting up (bench/workloads.py)"
)


class PromptText(BaseModel):
    """What a prefill point's prompt is: its text, its depth and how the depth was made."""

    text: PrefillTextKind = Field(description="the text the prompt was cut from")
    source: str = Field(description="where that text comes from; the corpus with its sha256")
    depth: int = Field(description="the prompt length asked for, in tokens")
    method: CutMethod = Field(
        description="how the depth was made: the text cut and re-tokenized by the server's "
        "/tokenize, the filler's token ids sent as the prompt, or an estimate of characters"
    )
    prompt_tokens: list[int] = Field(
        default_factory=list,
        description="the prompt's text, salt included, re-tokenized by the server's /tokenize "
        "with no special tokens (a cold point: one count per fresh salt checked); empty where "
        "lengths are estimated. Each request's own server count is in its sample",
    )
    exact: bool = Field(description="every count in prompt_tokens is the depth")
    salt_tokens: int | None = Field(
        default=None,
        description="the salt in front of the text, in tokens, part of the depth: drawn afresh "
        "for every request of a cold point, once for a cached one",
    )
    copies: int = Field(
        default=1,
        description="copies of the text the prompt spans: above 1, the text was repeated "
        "(a blank line between copies) to reach the depth",
    )
    note: str = Field(default="", description="why the text or method is not the one asked for")


@dataclass(frozen=True)
class PrefillPrompts:
    """The prefill suite's prompts by depth; no cuts when it fell back (`note` says why)."""

    asked: PrefillTextKind
    source: str
    cuts: dict[int, DepthPrompts] = field(default_factory=dict)
    note: str = ""

    def record(self, depth: int, *, cold: bool, token_ids: bool) -> PromptText:
        """The receipt's account of one point's prompt; `token_ids`: the fallback sends the
        filler's token ids (the server has /tokenize) rather than estimated text."""
        cut = self.cuts.get(depth)
        if cut is not None:
            counts = list(cut.counts[1:] if cold else cut.counts[:1])
            return PromptText(
                text=self.asked,
                source=self.source,
                depth=depth,
                method="cut, re-tokenized",
                prompt_tokens=counts,
                exact=set(counts) == {depth},
                salt_tokens=cut.salt_tokens,
                copies=cut.copies,
            )
        return PromptText(
            text="filler",
            source=FILLER_SOURCE,
            depth=depth,
            method="token ids" if token_ids else "estimated",
            prompt_tokens=[depth] if token_ids else [],
            exact=token_ids,
            salt_tokens=defaults.BENCH_SALT_TOKENS if cold and token_ids else None,
            note=self.note,
        )

    def fell_back(self, *, token_ids: bool) -> PrefillPrompts:
        """These prompts with the note that says which fallback the suite took."""
        how = (
            "the filler's token ids (exact lengths, sent as ids, not text)"
            if token_ids
            else "the filler text at an estimated "
            f"{defaults.BENCH_CHARS_PER_TOKEN_ESTIMATE} characters a token (not exact; each "
            "request's server count is in its sample)"
        )
        return replace(
            self,
            note=f"prefill text: {self.asked} asked, but it cannot be cut at exact depths "
            f"here ({self.note}) — the prefill points use {how}",
        )


def text_to_cut(asked: PrefillTextKind, deepest: int) -> tuple[str, str]:
    """The text `--prefill-text` names, and where it comes from."""
    if asked == "corpus":
        return corpus_text(), f"{CORPUS_SOURCE}, sha256 {corpus_sha256()}"
    return filler_text(deepest * 2), FILLER_SOURCE


async def prefill_prompts(
    client: EndpointClient, model: str, settings: BenchSettings
) -> PrefillPrompts:
    """Every prefill depth cut from the text asked for; on failure no cuts, and why."""
    text, source = text_to_cut(settings.prefill_text, max(settings.prefill_depths))
    try:
        cuts = await cut_depths(ServerTokenizer(client, model), text, settings.prefill_depths)
    except EndpointError as exc:
        return PrefillPrompts(settings.prefill_text, source, note=str(exc))
    return PrefillPrompts(settings.prefill_text, source, cuts)
