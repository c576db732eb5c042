"""One reasoning field: whatever the upstream used (`reasoning_content`, `reasoning`, or
`<think>…</think>` inside the content), the client gets the reasoning under the key(s) it asked
for (docs/field-notes.md: servers disagree on the key, and a client reading the other one sees
empty reasoning). Pure: parsed JSON in, parsed JSON out.
"""

from __future__ import annotations

from typing import Any, Literal

from sparkrig.wire.reasoning import CLOSE_TAG, OPEN_TAG, REASONING_KEYS

ReasoningKeys = Literal["both", "reasoning_content", "reasoning"]
UPSTREAM_KEYS = REASONING_KEYS


def target_keys(keys: ReasoningKeys) -> tuple[str, ...]:
    return UPSTREAM_KEYS if keys == "both" else (keys,)


def take_reasoning(holder: dict[str, Any]) -> tuple[str, str | None]:
    """Remove the upstream's reasoning keys that carry text from a message or delta; (text, key
    it came under). A key that carries none (vLLM's `"reasoning": null`) stays as it came. A
    server that sends the same text under both keys gives it once."""
    texts: dict[str, str] = {}
    for name in UPSTREAM_KEYS:
        value = holder.get(name)
        if isinstance(value, str) and value:
            texts[name] = holder.pop(name)
    if not texts:
        return "", None
    key, text = next(iter(texts.items()))
    if len(texts) == 2 and texts["reasoning"] != texts["reasoning_content"]:
        text = texts["reasoning_content"] + texts["reasoning"]
    return text, key


def put_reasoning(holder: dict[str, Any], text: str, keys: ReasoningKeys) -> None:
    if text:
        for key in target_keys(keys):
            holder[key] = text


class ThinkTags:
    """`<think>…</think>` in the content, split off as it streams. The block counts when the
    content opens with `<think>`, or from the very start when the chat template opened it in the
    prompt (`opened_by_template`: then only `</think>` reaches the stream). After the block,
    the blank line before the answer is dropped, as llama.cpp's own parser does."""

    def __init__(self, *, opened_by_template: bool) -> None:
        self._state = "inside" if opened_by_template else "start"
        self._held = ""
        self.closed = False

    @property
    def inside(self) -> bool:
        return self._state == "inside"

    def feed(self, text: str) -> tuple[str, str]:
        """(reasoning, content) for one piece of upstream content."""
        text = self._held + text
        self._held = ""
        if self._state == "start":
            stripped = text.lstrip()
            if not stripped:  # whitespace goes out as it came, in its own event; the tag may follow
                return "", text
            if OPEN_TAG.startswith(stripped):  # maybe the tag, not yet whole
                self._held = text
                return "", ""
            if not stripped.startswith(OPEN_TAG):
                self._state = "content"
                return "", text
            self._state, text = "inside", stripped[len(OPEN_TAG) :]
        if self._state == "inside":
            return self._inside(text)
        if self._state == "after":
            text = text.lstrip("\n")
            if not text:
                return "", ""
            self._state = "content"
        return "", text

    def finish(self) -> tuple[str, str]:
        held, self._held = self._held, ""
        return (held, "") if self._state == "inside" else ("", held)

    def _inside(self, text: str) -> tuple[str, str]:
        at = text.find(CLOSE_TAG)
        if at != -1:
            self._state, self.closed = "after", True
            rest = text[at + len(CLOSE_TAG) :].lstrip("\n")
            if rest:
                self._state = "content"
            return text[:at], rest
        keep = next(
            (size for size in range(len(CLOSE_TAG) - 1, 0, -1) if text.endswith(CLOSE_TAG[:size])),
            0,
        )
        self._held = text[len(text) - keep :] if keep else ""
        return text[: len(text) - keep], ""
