"""Prompts of exact token depths cut from a real text through the server's own tokenizer.

Every prompt is a salt, then a body of the text. The text is tokenized by the server's /tokenize
(repeated, a blank line between copies, when it is shorter than the deepest depth), the body's
tokens are turned back into text by /detokenize, and salt and body are tokenized again to confirm
the depth. A cut that splits a merge re-tokenizes a token either side (a text that ends in
"\n\n" ends in one token, not the two it had before "```"), so the cut moves a token at a time, at
most BENCH_CUT_PROBES tries; where no prefix of the text has the count asked for, the salt takes
a word more or fewer (at most BENCH_SALT_WORD_SPREAD), which shifts the body's length by one.

The salt is a fixed head, words drawn from those of SALT_WORDS that are one token each on this
tokenizer, and a newline: its length is the same for every draw of as many words (words split at
spaces before any merge, in BPE and SentencePiece alike). A cold prompt draws a fresh salt for
every request, so no cached prefix matches past the head; a cached one draws it once and sends
the same prompt every time. Each depth is checked with BENCH_SALT_CHECKS fresh salts.
"""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass
from typing import Protocol

from sparkrig import defaults
from sparkrig.client import EndpointClient
from sparkrig.client.tokenize import server_detokenize, server_tokenize
from sparkrig.errors import EndpointError

SEPARATOR = "\n\n"  # between copies of a text repeated to reach a depth
SALT_HEAD = "Session"
# common words, most of them one token in any tokenizer of 32K entries or more
_SALT_WORD_LIST = """
    apple river stone cloud green house light music night paper plant water world table chair
    bread field glass horse money ocean party queen radio smile storm sugar train truck voice
    wheel woman north south blue black white brown small large quick slow warm cold early late
    happy quiet round sharp sweet fresh clean heavy city road book door fire tree bird fish ship
    star"""
SALT_WORDS = tuple(_SALT_WORD_LIST.split())


class CutError(EndpointError):
    """The text could not be cut at a depth on this server (no /detokenize, a tokenizer that
    will not re-tokenize a cut to its count, a depth shorter than the salt)."""


class TextTokenizer(Protocol):
    async def tokenize(self, text: str) -> list[int]: ...

    async def detokenize(self, tokens: list[int]) -> str: ...


@dataclass(frozen=True)
class ServerTokenizer:
    """The server's /tokenize and /detokenize for one model."""

    client: EndpointClient
    model: str

    async def tokenize(self, text: str) -> list[int]:
        return await server_tokenize(self.client, self.model, text)

    async def detokenize(self, tokens: list[int]) -> str:
        return await server_detokenize(self.client, self.model, tokens)


@dataclass(frozen=True)
class Salt:
    words: tuple[str, ...]  # each one token after a space on the server's tokenizer
    head_tokens: int  # SALT_HEAD alone

    def fresh(self, count: int) -> str:
        """A salt of `count` words, not drawn before (len(words) ** count of them)."""
        drawn = (secrets.choice(self.words) for _ in range(count))
        return SALT_HEAD + "".join(f" {word}" for word in drawn) + "\n"

    def tokens(self, count: int) -> int:
        """A salt's length in tokens: head, words and newline."""
        return self.head_tokens + count + 1


@dataclass(frozen=True)
class DepthPrompts:
    """One depth's prompts: a salt drawn once then the body (cached), or a fresh salt for every
    request then the same body (cold)."""

    depth: int
    cached: str
    body: str
    salt: Salt
    salt_words: int
    counts: tuple[int, ...]  # re-tokenized: the cached prompt, then each fresh salt checked
    copies: int  # copies of the text the body spans

    def cold(self) -> str:
        return self.salt.fresh(self.salt_words) + self.body

    @property
    def salt_tokens(self) -> int:
        return self.salt.tokens(self.salt_words)


async def salt_for(tokenizer: TextTokenizer) -> Salt:
    """The salt words that are one token each after a space on this tokenizer."""
    head = len(await tokenizer.tokenize(SALT_HEAD))
    spoken = "".join(f" {word}" for word in SALT_WORDS)
    if len(await tokenizer.tokenize(SALT_HEAD + spoken)) == head + len(SALT_WORDS):
        words = SALT_WORDS  # no word took two tokens (each takes at least one)
    else:
        counts = await asyncio.gather(
            *(tokenizer.tokenize(f"{SALT_HEAD} {word}") for word in SALT_WORDS)
        )
        words = tuple(w for w, c in zip(SALT_WORDS, counts, strict=True) if len(c) == head + 1)
    if len(words) < defaults.BENCH_SALT_MIN_WORDS:
        raise CutError(
            f"only {len(words)} of the {len(SALT_WORDS)} salt words are one token on this "
            f"tokenizer, under the {defaults.BENCH_SALT_MIN_WORDS} that cold salts need"
        )
    return Salt(words, head)


def repeated(text: str, chars: int) -> str:
    """The first `chars` characters of `text` repeated, SEPARATOR between copies."""
    unit = text + SEPARATOR
    return (unit * (chars // len(unit) + 1))[:chars]


async def source_tokens(tokenizer: TextTokenizer, text: str, need: int) -> list[int]:
    """At least `need` of the server's tokens of `text`, repeated as far as it takes."""
    if not text:
        raise CutError("the prefill text is empty")
    chars = need * defaults.BENCH_CUT_CHARS_PER_TOKEN_BOUND
    for _ in range(8):  # each try at least doubles the text
        tokens = await tokenizer.tokenize(repeated(text, chars))
        if len(tokens) >= need:
            return tokens
        chars = max(2 * chars, chars * need // max(len(tokens), 1) + chars // 4)
    raise CutError(f"the prefill text gave only {len(tokens)} tokens, under the {need} needed")


async def cut_to_count(
    tokenizer: TextTokenizer,
    tokens: list[int],
    target: int,
    prefix: str = "",
    prefix_tokens: int = 0,
) -> tuple[str, int]:
    """The text of a prefix of `tokens` whose re-tokenized count, behind `prefix`, is `target`
    (or the closest of BENCH_CUT_PROBES tries), and that count."""
    take = target - prefix_tokens
    if take < 1:
        raise CutError(
            f"a depth of {target} tokens leaves no room behind a {prefix_tokens}-token salt — "
            f"ask for depths above {prefix_tokens}"
        )
    tried: dict[int, int] = {}
    best: tuple[str, int] | None = None
    for _ in range(defaults.BENCH_CUT_PROBES):
        body = await tokenizer.detokenize(tokens[:take])
        count = len(await tokenizer.tokenize(prefix + body))
        tried[take] = count
        if best is None or abs(count - target) < abs(best[1] - target):
            best = (body, count)
        following = _next_take(tried, take + target - count, len(tokens))
        if count == target or following is None:
            break
        take = following
    assert best is not None  # BENCH_CUT_PROBES >= 1
    return best


def _next_take(tried: dict[int, int], jump: int, most: int) -> int | None:
    """The count of tokens to try next: the jump the last count asks for, else the nearest
    one not tried around it."""
    for step in range(most):
        for take in (jump - step, jump + step):
            if 0 < take <= most and take not in tried:
                return take
    return None


def salt_word_counts() -> list[int]:
    """Salt lengths in words to try, nearest BENCH_SALT_TOKENS first: 8, 7, 9, 6, 10, ..."""
    spread = range(1, defaults.BENCH_SALT_WORD_SPREAD + 1)
    usual = defaults.BENCH_SALT_TOKENS
    return [usual, *(n for step in spread for n in (usual - step, usual + step) if n > 0)]


async def cut_depth(
    tokenizer: TextTokenizer, tokens: list[int], salt: Salt, depth: int
) -> tuple[str, int, int]:
    """The body and salt length (in words) whose prompt re-tokenizes to `depth`, or the
    closest tried, and its count."""
    best: tuple[str, int, int] | None = None
    for words in salt_word_counts():
        body, count = await cut_to_count(
            tokenizer, tokens, depth, salt.fresh(words), salt.tokens(words)
        )
        if best is None or abs(count - depth) < abs(best[2] - depth):
            best = (body, words, count)
        if count == depth:
            break
    assert best is not None  # salt_word_counts() is never empty
    return best


async def cut_depths(
    tokenizer: TextTokenizer, text: str, depths: list[int]
) -> dict[int, DepthPrompts]:
    """Every depth's cached and cold prompts, each re-tokenized to its depth; CutError when a
    count misses by more than BENCH_DEPTH_TOLERANCE_TOKENS."""
    salt = await salt_for(tokenizer)
    tokens = await source_tokens(tokenizer, text, max(depths) + defaults.BENCH_CUT_MARGIN_TOKENS)
    unit = len(text) + len(SEPARATOR)
    cuts: dict[int, DepthPrompts] = {}
    for depth in sorted(set(depths)):
        body, words, _ = await cut_depth(tokenizer, tokens, salt, depth)
        cached = salt.fresh(words) + body
        prompts = [cached, *(salt.fresh(words) + body for _ in range(defaults.BENCH_SALT_CHECKS))]
        counts = tuple([len(await tokenizer.tokenize(prompt)) for prompt in prompts])
        if max(abs(count - depth) for count in counts) > defaults.BENCH_DEPTH_TOLERANCE_TOKENS:
            raise CutError(
                f"the text cut at {depth} tokens re-tokenizes to {', '.join(map(str, counts))} "
                f"behind {len(counts)} salts, more than {defaults.BENCH_DEPTH_TOLERANCE_TOKENS} "
                "from the depth"
            )
        cuts[depth] = DepthPrompts(
            depth=depth,
            cached=cached,
            body=body,
            salt=salt,
            salt_words=words,
            counts=counts,
            copies=-(-len(body) // unit),
        )
    return cuts
