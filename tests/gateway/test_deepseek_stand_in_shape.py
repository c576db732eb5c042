"""The DeepSeek V4 stand-in (tests/gateway/deepseek_upstream.py) sends its stream in the shape of
vLLM 0.26.0's own chat endpoint: the bytes of the CPU replay (tests/fixtures/vllm/replay/, the
DeepSeek V4 server with thinking on by default) for the same two requests, thinking on and off.
Token counts differ (the texts do); what must not is the skeleton: a role event, the reasoning
events, the content events, the finish reason on the last content event (vLLM sends no separate
empty finish event), and a usage event with no choices only when include_usage asked for it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.gateway.deepseek_upstream import MODEL, DeepSeekV4Upstream, serve_deepseek

ROOT = Path(__file__).resolve().parents[2]
RECORD = json.loads((ROOT / "tests/fixtures/vllm/replay/think-0.26.0.json").read_text())
VLLM = {row["ask"]: row for row in RECORD["rows"] if row["server"] == "dsv4-thinking-default"}


def skeleton(body: str) -> list[str]:
    """Each event's kind, runs of one kind collapsed; a finish reason is marked on its event."""
    kinds: list[str] = []
    for line in body.splitlines():
        if not line.startswith("data: {"):
            continue
        event = json.loads(line[6:])
        if not event.get("choices"):
            kind = "usage" if event.get("usage") else "empty"
        else:
            choice = event["choices"][0]
            delta = choice.get("delta") or {}
            kind = "role" if "role" in delta else "+".join(k for k in delta if delta[k]) or "none"
            if choice.get("finish_reason"):
                kind += ":finish"
        if not kinds or kinds[-1] != kind:
            kinds.append(kind)
    return kinds


@pytest.mark.parametrize("ask", ["inherit", "off"])
@pytest.mark.parametrize("usage", [True, False], ids=["include-usage", "no-usage"])
async def test_the_stand_ins_stream_has_vllms_skeleton(ask: str, usage: bool) -> None:
    row = VLLM[ask]
    body: dict[str, Any] = {
        "model": MODEL,
        "messages": [{"role": "user", "content": "What's 1 + 1?"}],
        "stream": True,
        **{k: v for k, v in row["request"].items() if k not in ("stream", "stream_options")},
    }
    if usage:
        body["stream_options"] = {"include_usage": True}
    upstream = DeepSeekV4Upstream(default_kwargs={"thinking": True}, runtime="vllm-0.26.0")
    async with (
        serve_deepseek(upstream) as url,
        aiohttp.ClientSession() as session,
        session.post(f"{url}/v1/chat/completions", json=body) as response,
    ):
        stand_in = (await response.read()).decode()
    expected = skeleton(row["stream_body"])  # the replay asked with include_usage
    if not usage:
        expected = [kind for kind in expected if kind != "usage"]
    assert skeleton(stand_in) == expected
