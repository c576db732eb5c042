"""Pure, incremental rewrites of a reply's content text.

Each transform sees the content piece by piece, as a stream delivers it, and answers the text to
send now; a non-streamed reply is one piece. So a fault alters a streamed and a non-streamed reply
the same way, and nothing waits for the whole reply unless the fault itself needs to.
`ended` becomes a finish_reason when a transform ends the reply early (the loop runs to "length").
"""

from __future__ import annotations

from collections.abc import Callable
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
