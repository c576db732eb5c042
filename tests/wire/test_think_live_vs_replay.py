"""The live think capture beside the CPU replay's prediction, once the capture exists.

The GPU test bed's think group (benchmarks/vllm_gpu, `think` in stages.py; issue 21's
`soakthink` runs it) sends capture.think_asks to a real vLLM 0.26.0 serving SmolLM2 with
think-template.jinja. Its files go to tests/fixtures/vllm/live/ as think-*.txt and
think-index.json. Until they do, this module skips and says so.

Captured on 2026-12-05 (an H100; tests/fixtures/vllm/README.md). The replay
(tests/fixtures/vllm/replay/, server `testbed`) fed the parser a fixed output, and a real
model writes what it writes. So only what holds whatever the model writes is compared, per request,
and both ways a reply can be read (whole and streamed):
- where the prompt is in thinking mode and the parser starts in reasoning, the reply has reasoning;
- where the parser starts in content (every effort "none" shape), the reply has no reasoning;
- where the prompt is in chat mode, a streamed reply has no reasoning; a whole one to a request
  that turned one switch on and one off has no content (the replay's parity break).
Where a stop string fired is the model's doing, so it is not compared.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.vllm_live import LIVE, landed, replay_contradictions

ROOT = Path(__file__).resolve().parents[2]
REPLAY = json.loads((ROOT / "tests/fixtures/vllm/replay/think-0.26.0.json").read_text())
INDEX = LIVE / "think-index.json"

if not INDEX.exists():
    pytest.skip(
        "no live think capture yet: run the think group on the GPU test bed "
        "(benchmarks/vllm_gpu/README.md) and copy its think-* files here",
        allow_module_level=True,
    )

CAPTURED = {entry["name"]: entry for entry in json.loads(INDEX.read_text())}
PREDICTED = {row["ask"]: row for row in REPLAY["rows"] if row["server"] == "testbed"}
ASKS = sorted(set(CAPTURED) & set(PREDICTED))


# asks of the replay's efforts test (tests/wire/test_vllm_replay.py) the GPU group never sends
REPLAY_ONLY = {"effort-low", "effort-max", "effort-xhigh", "effort-low-kwargs-on"}


def reply_of(name: str, label: str = "think") -> tuple[str, str]:
    return landed((LIVE / f"{label}-{name}.txt").read_bytes())


def completion_tokens(name: str) -> int:
    """The usage's completion tokens of a captured reply, whole or streamed (the last usage)."""
    text = (LIVE / f"think-{name}.txt").read_text()
    if text.lstrip().startswith("{"):
        return int(json.loads(text)["usage"]["completion_tokens"])
    events = [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: {")]
    return int([event for event in events if event.get("usage")][-1]["usage"]["completion_tokens"])


def test_every_chat_request_of_the_think_group_was_captured_and_answered() -> None:
    chat = {name for name, entry in CAPTURED.items() if entry["method"] == "POST"}
    assert chat == set(PREDICTED) - REPLAY_ONLY
    assert all(CAPTURED[ask]["status"] == 200 for ask in chat)


@pytest.mark.parametrize("ask", ASKS)
def test_the_live_reply_lands_where_the_replay_says_it_must(ask: str) -> None:
    """A reply with nothing in it says nothing about where text lands. On 2026-12-05 SmolLM2
    ended its turn at once (one token, the end of turn) after every `<think>` opener, a token
    it was never trained on: then the prompt must have been in thinking mode."""
    streamed = bool(CAPTURED[ask]["request"].get("stream"))
    reasoning, content = reply_of(ask)
    if not (reasoning.strip() or content.strip()):
        assert PREDICTED[ask]["prompt_mode"] == "thinking"
        assert completion_tokens(ask) == 1
        return
    assert replay_contradictions(PREDICTED[ask], streamed, reasoning, content) == []


def test_the_replays_parity_break_happens_on_the_live_engine() -> None:
    """`thinking: false` beside a top-level effort: the replay said vLLM 0.26.0 files a whole
    reply in reasoning (content null) and a streamed one in content. The live engine did, with
    the same greedy answer both ways."""
    whole_reasoning, whole_content = reply_of("effort-high-off")
    streamed_reasoning, streamed_content = reply_of("effort-high-off-stream")
    assert (whole_content, streamed_reasoning) == ("", "")
    assert whole_reasoning.strip() == streamed_content.strip() == "1 + 1 = 2"
    assert reply_of("off") == ("", "1 + 1 = 2")  # thinking off alone: content, as predicted


def test_the_live_gateway_relayed_every_reply_as_vllm_sent_it() -> None:
    """`gateway serve` in front of the same server (think-gateway-*): each reply lands as the
    direct one did; the gateway flags requests, it never rewrites a reply."""
    gateway = {e["name"] for e in json.loads((LIVE / "think-gateway-index.json").read_text())}
    assert set(ASKS) <= gateway
    assert all(reply_of(ask, "think-gateway") == reply_of(ask) for ask in ASKS)
