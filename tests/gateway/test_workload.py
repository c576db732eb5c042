"""The workload line `gateway serve` writes: its prompt character count is the fault gateway's
(request_faults.prompt_chars), so text parts and lists of prompt strings count too."""

from __future__ import annotations

from typing import Any

import pytest

from sparkrig.gateway.request_faults import Api
from sparkrig.gateway.shaping import ReplyText
from sparkrig.gateway.trace import Trace
from sparkrig.gateway.workload import workload_record


def line(api: Api, body: dict[str, Any]) -> int | None:
    trace = Trace(request_id="r", api=api, body=body, wall=0.0, start_ns=0)
    return workload_record(trace, ReplyText(), end_ns=1, record_prompts=False).prompt_chars


@pytest.mark.parametrize(
    ("api", "body", "chars"),
    [
        ("chat", {"messages": [{"role": "user", "content": "hello"}]}, 5),
        # an OpenAI client's text parts (an image part has no text): 3 + 4, once undercounted as 0
        (
            "chat",
            {
                "messages": [
                    {"role": "system", "content": "abc"},
                    {
                        "role": "user",
                        "content": [
                            {"type": "text", "text": "defg"},
                            {"type": "image_url", "image_url": {"url": "x"}},
                        ],
                    },
                ]
            },
            7,
        ),
        ("completions", {"prompt": "hello"}, 5),
        ("completions", {"prompt": ["ab", "cde"]}, 5),  # a batch of prompts, once 0
        ("completions", {"prompt": [1, 2, 3]}, 0),  # token ids have no characters
    ],
)
def test_prompt_characters_count_every_text(api: Api, body: dict[str, Any], chars: int) -> None:
    assert line(api, body) == chars
