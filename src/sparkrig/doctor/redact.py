"""Remove what must not leave the machine in a diagnostics bundle: API keys, tokens, passwords
and prompt or reply text (pure). Text is redacted by pattern; JSON by walking it, so a secret in
an environment entry (`{"name": "HF_TOKEN", "value": …}`), after `--api-key` in an argv list, or
under a prompt key (`messages`, `prompt`, `content`, …) goes however it is nested."""

from __future__ import annotations

import re
from typing import Any

from sparkrig.secret_names import after_secret_flags, is_secret_name

REMOVED = "[removed]"
_PROMPT_KEYS = frozenset(
    {
        "prompt",
        "prompts",
        "messages",
        "content",
        "reasoning_content",
        "reasoning",
        "text",
        "completion",
        "output",
        "input",
        "response",
        "reply",
        "system",
        "instructions",
    }
)
_TEXT_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=-]+"), rf"\1 {REMOVED}"),
    (re.compile(r"\bsk-[A-Za-z0-9_-]{8,}"), REMOVED),
    (re.compile(r"\bhf_[A-Za-z0-9]{8,}"), REMOVED),
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{8,}"), REMOVED),
    (
        re.compile(r"(?i)(--(?:api-key|hf-token|token|password))([ =])(\S+)"),
        rf"\1\2{REMOVED}",
    ),
    (
        re.compile(
            r"(?i)\b([A-Z0-9_]*(?:API_KEY|TOKEN|SECRET|PASSWORD)[A-Z0-9_]*)=(\"[^\"]*\"|'[^']*'|\S+)"
        ),
        rf"\1={REMOVED}",
    ),
    (
        re.compile(
            r"(?i)(\"?(?:api_key|token|secret|password|authorization)\"?\s*[:=]\s*)\"[^\"]*\""
        ),
        rf'\1"{REMOVED}"',
    ),
    # prompts as engines log them: vLLM's `prompt: '…'` / `prompt_token_ids: […]`
    (
        re.compile(
            r"(\bprompt(?:_token_ids)?:\s*)('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|\[[^\]]*\])"
        ),
        rf"\1{REMOVED}",
    ),
)


def redact_text(text: str) -> str:
    for pattern, replacement in _TEXT_PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def _hidden(key: str | None) -> bool:
    return key is not None and (key.lower() in _PROMPT_KEYS or is_secret_name(key))


def _redact_list(items: list[Any]) -> list[Any]:
    values = after_secret_flags(items)
    return [REMOVED if i in values else redact_json(item) for i, item in enumerate(items)]


def redact_json(value: Any, key: str | None = None) -> Any:
    """A copy of parsed JSON with secrets and prompt text replaced."""
    if isinstance(value, dict):
        named = value.get("name")
        copy = {k: redact_json(v, k) for k, v in value.items()}
        if isinstance(named, str) and is_secret_name(named) and "value" in value:
            copy["value"] = REMOVED  # an environment entry: {"name": "HF_TOKEN", "value": …}
        return copy
    if isinstance(value, list | str) and value and _hidden(key):
        return REMOVED
    if isinstance(value, list):
        return _redact_list(value)
    return redact_text(value) if isinstance(value, str) else value
