"""degrade-after: sharp logprobs made soft; drift-after: every logprob moved by a constant;
top-mismatch: the sampled token's own top_logprobs entry moved away from its logprob. Tokens and
text unchanged.

Modelled on a warm server whose lone requests got soft logits (field notes: c128a-alone-soft).

Both shapes are handled: chat-style `{"content": [{token, logprob, top_logprobs}]}` (llama.cpp
uses it for completions too) and legacy completions `{tokens, token_logprobs, top_logprobs}`.
"""

from __future__ import annotations

import math
from typing import Any

from sparkrig import defaults
from sparkrig.outside_numbers import number_or_none

SOFT_TOP1 = math.log(defaults.GATEWAY_SOFT_TOP1_PROB)
SOFT_RUNNER_UP = math.log(defaults.GATEWAY_SOFT_RUNNER_UP_PROB)
_LEFT_OVER = 1.0 - defaults.GATEWAY_SOFT_TOP1_PROB - defaults.GATEWAY_SOFT_RUNNER_UP_PROB


def soften_logprobs(logprobs: dict[str, Any]) -> None:
    """Rewrite a choice's `logprobs` in place."""
    if isinstance(logprobs.get("content"), list):
        for item in logprobs["content"]:
            if isinstance(item, dict):
                _soften_item(item)
        return
    if isinstance(logprobs.get("token_logprobs"), list):
        logprobs["token_logprobs"] = [SOFT_TOP1 for _ in logprobs["token_logprobs"]]
        tokens = logprobs.get("tokens") or []
        tops = logprobs.get("top_logprobs") or []
        logprobs["top_logprobs"] = [
            _soften_legacy_top(top, token) if isinstance(top, dict) else top
            for top, token in zip(tops, tokens, strict=False)
        ] + tops[len(tokens) :]


def _soften_item(item: dict[str, Any]) -> None:
    item["logprob"] = SOFT_TOP1
    tops = item.get("top_logprobs")
    if not isinstance(tops, list) or not tops:
        return
    chosen = next((top for top in tops if top.get("token") == item.get("token")), tops[0])
    others = sorted((top for top in tops if top is not chosen), key=_logprob, reverse=True)
    chosen["logprob"] = SOFT_TOP1
    if others:
        others[0]["logprob"] = SOFT_RUNNER_UP
        rest_cap = math.log(_LEFT_OVER / max(1, len(others) - 1))
        for top in others[1:]:
            top["logprob"] = min(_logprob(top), rest_cap)  # keep the distribution a distribution
    tops.sort(key=_logprob, reverse=True)


def _logprob(top: dict[str, Any]) -> float:
    value = number_or_none(top.get("logprob"))  # 10**400 from a server is not a logprob
    return -math.inf if value is None else value


def _soften_legacy_top(top: dict[str, float], token: str) -> dict[str, float]:
    ranked = sorted(top, key=lambda key: top[key], reverse=True)
    runner_up = next((key for key in ranked if key != token), None)
    rest_cap = math.log(_LEFT_OVER / max(1, len(ranked) - 2))
    soft = {key: min(value, rest_cap) for key, value in top.items()}
    soft[token] = SOFT_TOP1
    if runner_up is not None:
        soft[runner_up] = SOFT_RUNNER_UP
    return dict(sorted(soft.items(), key=lambda pair: pair[1], reverse=True))


def shift_logprobs(logprobs: dict[str, Any], nats: float) -> None:
    """drift-after: every logprob, chosen and alternatives, plus `nats`, in place; the order of
    the candidates and every margin between them stay as they were."""
    if isinstance(logprobs.get("content"), list):
        for item in logprobs["content"]:
            if not isinstance(item, dict):
                continue
            if isinstance(item.get("logprob"), (int, float)):
                item["logprob"] += nats
            for top in item.get("top_logprobs") or []:
                if isinstance(top, dict) and isinstance(top.get("logprob"), (int, float)):
                    top["logprob"] += nats
        return
    if isinstance(logprobs.get("token_logprobs"), list):
        logprobs["token_logprobs"] = [
            value + nats if isinstance(value, (int, float)) else value
            for value in logprobs["token_logprobs"]
        ]
        logprobs["top_logprobs"] = [
            {key: value + nats for key, value in top.items()} if isinstance(top, dict) else top
            for top in logprobs.get("top_logprobs") or []
        ]


def mismatch_chosen_top(logprobs: dict[str, Any], nats: float) -> None:
    """top-mismatch: the sampled token's entry among its own top alternatives plus `nats`, in
    place; the token's logprob, the other alternatives, the text and the tokens unchanged."""
    if isinstance(logprobs.get("content"), list):
        for item in logprobs["content"]:
            if not isinstance(item, dict):
                continue
            for top in item.get("top_logprobs") or []:
                if isinstance(top, dict) and top.get("token") == item.get("token"):
                    if isinstance(top.get("logprob"), (int, float)):
                        top["logprob"] += nats
                    break
        return
    if isinstance(logprobs.get("token_logprobs"), list):
        tokens = logprobs.get("tokens") or []
        for top, token in zip(logprobs.get("top_logprobs") or [], tokens, strict=False):
            if isinstance(top, dict) and isinstance(top.get(token), (int, float)):
                top[token] += nats
