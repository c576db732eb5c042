"""What the gateway reads from, and changes in, a generation request before it goes upstream."""

from __future__ import annotations

import copy
import re
from typing import Any, Final, Literal

Api = Literal["chat", "completions"]


def _text_of(content: Any) -> str:
    """A message's text: a string, or the text parts of a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part.get("text", "")
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return ""


def prompt_text(body: dict[str, Any], api: Api) -> str:
    """The prompt's text: all message contents, or the prompt string(s), joined. A prompt of
    token ids has no text."""
    if api == "chat":
        messages = body.get("messages")
        if not isinstance(messages, list):
            return ""
        return "".join(_text_of(m.get("content")) for m in messages if isinstance(m, dict))
    prompt = body.get("prompt")
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list):
        return "".join(item for item in prompt if isinstance(item, str))
    return ""


def prompt_chars(body: dict[str, Any], api: Api) -> int:
    """Characters of the prompt (`prompt_text`); a prompt of token ids counts as 0."""
    return len(prompt_text(body, api))


def asks_logprobs(body: dict[str, Any]) -> bool:
    value = body.get("logprobs")
    return value is not None and value is not False


def without_middle_third(text: str) -> str:
    third = len(text) // 3
    return text[:third] + text[len(text) - third :] if third else text


def truncate_context(body: dict[str, Any], api: Api) -> dict[str, Any]:
    """truncate-context: drop the middle third of the longest user message (a string content) or
    of the prompt string, as a context-window bug that loses the middle of a document would."""
    body = copy.deepcopy(body)
    if api == "completions":
        if isinstance(body.get("prompt"), str):
            body["prompt"] = without_middle_third(body["prompt"])
        return body
    users = [
        message
        for message in body.get("messages") or []
        if isinstance(message, dict)
        and message.get("role") == "user"
        and isinstance(message.get("content"), str)
    ]
    if users:
        longest = max(users, key=lambda message: len(message["content"]))
        longest["content"] = without_middle_third(longest["content"])
    return body


_CODE: Final = re.compile(r"(?<!\d)\d{6,}(?!\d)")  # a planted fact's code; filler has none
SPREAD_EDGE: Final = 0.2  # the first code in the prompt's first fifth, the last in its last


def without_middle_fact(text: str) -> str | None:
    """drop-middle-fact: the text without the sentence holding the code nearest its middle, when
    it holds three or more codes (numbers of six or more digits) spread over all of it, the first
    in its first fifth and the last in its last (as a three-needle probe plants them; facts one
    per block, as KV integrity plants them, end two thirds in); None when it does not."""
    codes = list(_CODE.finditer(text))
    if len(codes) < 3:
        return None
    if codes[0].start() > SPREAD_EDGE * len(text) or codes[-1].start() < (1 - SPREAD_EDGE) * len(
        text
    ):
        return None
    middle = min(codes[1:-1], key=lambda code: abs(code.start() - len(text) / 2))
    start = max(text.rfind(". ", 0, middle.start()) + 2, text.rfind("\n", 0, middle.start()) + 1)
    end = text.find(". ", middle.end())
    end = len(text) if end < 0 else end + 2
    return text[:start] + text[end:]


def drop_middle_fact(body: dict[str, Any], api: Api) -> dict[str, Any] | None:
    """The request with `without_middle_fact` applied to its longest user message (a string
    content) or its prompt string; None when that holds no such spread of facts."""
    body = copy.deepcopy(body)
    if api == "completions":
        prompt = body.get("prompt")
        dropped = without_middle_fact(prompt) if isinstance(prompt, str) else None
        if dropped is None:
            return None
        body["prompt"] = dropped
        return body
    users = [
        message
        for message in body.get("messages") or []
        if isinstance(message, dict)
        and message.get("role") == "user"
        and isinstance(message.get("content"), str)
    ]
    if not users:
        return None
    longest = max(users, key=lambda message: len(message["content"]))
    dropped = without_middle_fact(longest["content"])
    if dropped is None:
        return None
    longest["content"] = dropped
    return body


def without_stop(body: dict[str, Any]) -> dict[str, Any]:
    """The request with its stop strings removed: the gateway applies them itself."""
    return {key: value for key, value in body.items() if key != "stop"}


def stamped_first_message(body: dict[str, Any], api: Api, stamp: str) -> dict[str, Any]:
    """stamp-first-message: `stamp` in front of the first message's text (a string content, or
    as a first text part) or of the prompt string, as a harness that puts a timestamp or a
    request id at the top of its system prompt: every request then differs from the one before
    at its first tokens, and no prefix cache can serve it."""
    body = copy.deepcopy(body)
    if api == "completions":
        if isinstance(body.get("prompt"), str):
            body["prompt"] = stamp + body["prompt"]
        return body
    messages = body.get("messages")
    first = messages[0] if isinstance(messages, list) and messages else None
    if not isinstance(first, dict):
        return body
    content = first.get("content")
    if isinstance(content, str):
        first["content"] = stamp + content
    elif isinstance(content, list):
        first["content"] = [{"type": "text", "text": stamp}, *content]
    return body
