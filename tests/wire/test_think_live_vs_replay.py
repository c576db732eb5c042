"""The live think capture beside the CPU replay's prediction, once the capture exists.

The GPU test bed's think group (benchmarks/vllm_gpu, `think` in stages.py; issue 21's
`soakthink` runs it) sends capture.think_asks to a real vLLM 0.26.0 serving SmolLM2 with
think-template.jinja. Its files go to tests/fixtures/vllm/live/ as think-*.txt and
think-index.json. Until they do, this module skips and says so.

The replay (tests/fixtures/vllm/replay/, server `testbed`) fed the parser a fixed output, and a real
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


def test_every_chat_request_of_the_think_group_was_captured_and_answered() -> None:
    assert set(PREDICTED) <= set(CAPTURED)
    assert all(CAPTURED[ask]["status"] == 200 for ask in ASKS)


@pytest.mark.parametrize("ask", ASKS)
def test_the_live_reply_lands_where_the_replay_says_it_must(ask: str) -> None:
    streamed = bool(CAPTURED[ask]["request"].get("stream"))
    reasoning, content = landed((LIVE / f"think-{ask}.txt").read_bytes())
    assert replay_contradictions(PREDICTED[ask], streamed, reasoning, content) == []
