"""Keep a reply's logprob tokens in step with its rewritten content, so a guard that compares
tokens sees a fault as surely as one that compares text: spliced text becomes one extra token,
and a digit fault changes the digits of the tokens that carried them."""

from __future__ import annotations

from typing import Any

from sparkrig.gateway.text_faults import TextTransform

# The splice was not the model's choice: it is reported as certain, with no alternative.
SPLICED_LOGPROB = 0.0


def spliced_token(text: str) -> dict[str, Any]:
    entry = {"id": -1, "token": text, "bytes": list(text.encode()), "logprob": SPLICED_LOGPROB}
    return {**entry, "top_logprobs": [dict(entry)]}


def retext_tokens(items: list[dict[str, Any]], transform: TextTransform) -> None:
    """Run the tokens' texts, in order, through a length-keeping transform (a digit fault)."""
    for item in items:
        old = item.get("token")
        if not isinstance(old, str):
            continue
        new = transform.feed(old)
        if new == old:
            continue
        item["token"] = new
        if "bytes" in item:
            item["bytes"] = list(new.encode())
        for top in item.get("top_logprobs") or []:
            if isinstance(top, dict) and top.get("token") == old:
                top["token"] = new
                if "bytes" in top:
                    top["bytes"] = list(new.encode())


def splice_index(items: list[dict[str, Any]], chars: int) -> int:
    """Where a splice after `chars` characters of text falls in the token list."""
    seen = 0
    for index, item in enumerate(items):
        seen += len(item.get("token") or "")
        if seen >= chars:
            return index + 1
    return len(items)
