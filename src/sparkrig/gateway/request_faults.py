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


def without_stop(body: dict[str, Any]) -> dict[str, Any]:
    """The request with its stop strings removed: the gateway applies them itself."""
    return {key: value for key, value in body.items() if key != "stop"}
