"""What the gateway reads from, and changes in, a generation request before it goes upstream."""

from __future__ import annotations

import copy
from typing import Any, Literal

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


def prompt_chars(body: dict[str, Any], api: Api) -> int:
    """Characters of the prompt: all message contents, or the prompt string(s). A prompt of token
    ids has no characters to count and counts as 0."""
    if api == "chat":
        messages = body.get("messages")
        if not isinstance(messages, list):
            return 0
        return sum(len(_text_of(m.get("content"))) for m in messages if isinstance(m, dict))
    prompt = body.get("prompt")
    if isinstance(prompt, str):
        return len(prompt)
    if isinstance(prompt, list):
        return sum(len(item) for item in prompt if isinstance(item, str))
    return 0


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
