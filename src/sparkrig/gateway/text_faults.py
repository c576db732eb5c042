"""Pure, incremental rewrites of a reply's content text.

Each transform sees the content piece by piece, as a stream delivers it, and answers the text to
send now; a non-streamed reply is one piece. So a fault alters a streamed and a non-streamed reply
the same way, and nothing waits for the whole reply unless the fault itself needs to.
`ended` becomes a finish_reason when a transform ends the reply early (the loop runs to "length").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Protocol

_NEXT_DIGIT = str.maketrans("0123456789", "1234567890")


class TextTransform(Protocol):
    ended: str | None

    def feed(self, text: str) -> str: ...

    def finish(self) -> str: ...


def shift_digits(text: str) -> str:
    """Every digit d -> (d+1) mod 10."""
    return text.translate(_NEXT_DIGIT)


class ShiftAllDigits:
    """wrong-answers: every digit of the reply is off by one."""

    ended: str | None = None

    def feed(self, text: str) -> str:
        return shift_digits(text)

    def finish(self) -> str:
        return ""


class ShiftFirstDigitRun:
    """block-corruption: the first run of digits (a planted fact's number) is altered, even when
    a stream splits the run across events."""

    ended: str | None = None

    def __init__(self) -> None:
        self._state = "before"  # before the run, inside it, after it

    def feed(self, text: str) -> str:
        if self._state == "after":
            return text
        out: list[str] = []
        for index, char in enumerate(text):
            if char.isascii() and char.isdigit():
                self._state = "inside"
                out.append(shift_digits(char))
            elif self._state == "inside":
                self._state = "after"
                return "".join(out) + text[index:]
            else:
                out.append(char)
        return "".join(out)

    def finish(self) -> str:
        return ""


SpanSource = Callable[[bool], str]
"""Text to splice in, or "" for not yet; its argument is True on the reply's last chance."""


class InsertAfter:
    """Splice text in after the first `after_chars` characters; a reply shorter than that gets it
    at its end. When the source has nothing yet, the splice moves to the next piece."""

    ended: str | None = None

    def __init__(self, after_chars: int, source: SpanSource) -> None:
        self._after = after_chars
        self._source = source
        self._seen = 0
        self._done = False
        self.spliced: list[str] = []

    @classmethod
    def fixed(cls, after_chars: int, text: str) -> InsertAfter:
        return cls(after_chars, lambda _final: text)

    def feed(self, text: str) -> str:
        if self._done or self._seen + len(text) < self._after:
            self._seen += len(text)
            return text
        cut = max(0, self._after - self._seen)
        self._seen += len(text)
        span = self._source(False)
        if not span:
            return text
        self._done = True
        self.spliced.append(span)
        return text[:cut] + span + text[cut:]

    def finish(self) -> str:
        if self._done:
            return ""
        self._done = True
        span = self._source(True)
        self.spliced.append(span)
        return span


class CutAfter:
    """cut-replies: the reply ends after its first `keep_chars` characters, with finish_reason
    "length", as a reply cut short by a max_tokens or stop bug would."""

    def __init__(self, keep_chars: int) -> None:
        self._left = keep_chars
        self.ended: str | None = None

    def feed(self, text: str) -> str:
        if self.ended:
            return ""
        kept, self._left = text[: self._left], self._left - len(text)
        if self._left <= 0:
            self.ended = "length"
        return kept

    def finish(self) -> str:
        return ""


class LoopAfter:
    """loop: keep the first `keep_chars`, then repeat a span of the reply until the content is
    `min_chars` long, and end the reply with finish_reason "length" as a runaway would."""

    def __init__(self, keep_chars: int, span_chars: int, min_chars: int) -> None:
        self._keep = keep_chars
        self._span = span_chars
        self._min = min_chars
        self._seen = ""
        self._sent = 0
        self.ended: str | None = None

    def feed(self, text: str) -> str:
        if self.ended:
            return ""
        self._seen += text
        out = self._seen[self._sent : self._keep]
        self._sent += len(out)
        if len(self._seen) >= self._keep + self._span:
            return out + self._loop(self._seen[self._keep : self._keep + self._span])
        return out

    def finish(self) -> str:
        if self.ended or not self._seen.strip():
            return ""  # nothing worth repeating
        out = self._seen[self._sent : self._keep]
        self._sent += len(out)
        return out + self._loop(self._seen[-self._span :])

    def _loop(self, span: str) -> str:
        if not span[-1].isspace():
            span += " "  # words must stay apart, or the repeats fuse into one long word
        repeats = -(-(self._min - self._sent) // len(span))
        self._sent += repeats * len(span)
        self.ended = "length"
        return span * repeats


class CountInstead:
    """count-garbage: every word of the reply becomes the next bare list marker ("1. 2. 3. …"),
    the degenerate counting a stack with CUDA graphs above two sequences answered every prompt
    with (field notes: graphs-above-two-seqs). Pieces keep their place in the stream."""

    ended: str | None = None

    def __init__(self) -> None:
        self._next = 1

    def feed(self, text: str) -> str:
        out: list[str] = []
        for _ in text.split():
            out.append(f"{self._next}. ")
            self._next += 1
        return "".join(out)

    def finish(self) -> str:
        return ""


class StrayHashes:
    """hash-bursts: after the first `after_chars` characters, a lone "#" before every
    `every`-th word, as the stray '#' tokens a corrupted KV cache put mid-sentence (field
    notes: hash-bursts-acceptance-collapse)."""

    ended: str | None = None

    def __init__(self, after_chars: int, every: int) -> None:
        self._after = after_chars
        self._every = every
        self._seen = 0
        self._spaces = 0

    def feed(self, text: str) -> str:
        out: list[str] = []
        for char in text:
            out.append(char)
            self._seen += 1
            if char == " " and self._seen > self._after:
                self._spaces += 1
                if self._spaces % self._every == 0:
                    out.append("# ")
        return "".join(out)

    def finish(self) -> str:
        return ""


class SplitMultibyte:
    """split-multibyte: a non-ASCII character that opens a piece becomes U+FFFD, as a
    multi-byte character cut apart at a token or event boundary comes out of a detokenizer that
    decodes each piece alone. ASCII text passes untouched."""

    ended: str | None = None

    def feed(self, text: str) -> str:
        if text and not text[0].isascii():
            return "\ufffd" + text[1:]
        return text

    def finish(self) -> str:
        return ""


_WORD = re.compile(r"[A-Za-z]+")
_TRAILING_WORD = re.compile(r"\s*([A-Za-z]+)$")
_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def swap_words(text: str, table: Mapping[str, str]) -> str:
    """Every whole word in `table` replaced (lower-case keys; a capital first letter stays)."""

    def swapped(match: re.Match[str]) -> str:
        word = match.group()
        new = table.get(word.lower())
        if new is None or word not in (word.lower(), word.capitalize()):
            return word
        return new.capitalize() if word[0].isupper() else new

    return _WORD.sub(swapped, text)


class SwapWords:
    """reword: whole words swapped by a table, as pieces arrive, so a streamed reply comes out
    as the whole one does. Only a piece's trailing word that could still grow into a table word
    ("t", "th", "the") waits, with its leading space, for the next piece: a held word that ends
    the reply then comes out in the tail in place of the event it was held from, so no event
    carries text without a token of its own."""

    ended: str | None = None

    def __init__(self, table: Mapping[str, str]) -> None:
        self._table = table
        self._held = ""
        self._in_word = False  # the last character sent was a letter: a word is under way

    def _could_become(self, word: str) -> bool:
        if word not in (word.lower(), word.capitalize()):
            return False
        return any(key.startswith(word.lower()) for key in self._table)

    def feed(self, text: str) -> str:
        text, self._held = self._held + text, ""
        lead = ""
        if self._in_word:  # letters that go on with a word already sent: never a table word
            lead = text[: len(text) - len(text.lstrip(_LETTERS))]
            text = text[len(lead) :]
        tail = _TRAILING_WORD.search(text)
        if tail and self._could_become(tail.group(1)):
            text, self._held = text[: tail.start()], text[tail.start() :]
        out = lead + swap_words(text, self._table)
        if out:
            self._in_word = out[-1].isalpha()
        return out

    def finish(self) -> str:
        held, self._held = self._held, ""
        return swap_words(held, self._table)


class SwapWordTokens:
    """reword in the logprob tokens: a token that is one whole word of the table (after its
    leading space) is swapped as the text is. A word the tokenizer split is swapped in the text
    only."""

    ended: str | None = None

    def __init__(self, table: Mapping[str, str]) -> None:
        self._table = table

    def feed(self, token: str) -> str:
        word = token.lstrip()
        if not word.isalpha():
            return token
        return token[: len(token) - len(word)] + swap_words(word, self._table)

    def finish(self) -> str:
        return ""


class TextChain:
    """Transforms applied in order; once one has ended the reply, the rest of it is dropped."""

    def __init__(self, transforms: list[TextTransform]) -> None:
        self._transforms = transforms
        self.ended: str | None = None

    def take_spliced(self) -> list[str]:
        """Texts the splices put in since the last call."""
        spliced: list[str] = []
        for transform in self._transforms:
            if isinstance(transform, InsertAfter):
                spliced += [span for span in transform.spliced if span]
                transform.spliced.clear()
        return spliced

    def feed(self, text: str) -> str:
        if self.ended:
            return ""
        for transform in self._transforms:
            text = transform.feed(text)
            if transform.ended:
                self.ended = transform.ended
        return text

    def finish(self) -> str:
        if self.ended:
            return ""
        out = ""
        for transform in self._transforms:
            out = (transform.feed(out) if out else "") + transform.finish()
            self.ended = self.ended or transform.ended
        return out
