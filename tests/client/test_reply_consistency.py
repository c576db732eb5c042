"""A reply judged against itself: each rule FAILS the reply that breaks it and passes the one a
healthy engine sends. The clean logprobs are the embedded engine's own (llama-server, SmolLM2,
"Count from 1 to 10, separated by commas." on chat, tokens 5 and 6, printed by this project's
probe); the broken ones are those values as the gateway's top-mismatch fault rewrites them."""

from __future__ import annotations

from sparkrig.client import ChatRequest, RequestRecord, SseEvent
from sparkrig.client.records import TokenLogprob, TopLogprob, Usage
from sparkrig.client.reply_consistency import reply_consistency
from sparkrig.gateway.soft_logprobs import mismatch_chosen_top

REQUEST = ChatRequest(model="m", messages=[{"role": "user", "content": "x"}], max_tokens=6)
CLEAN_CHAT_LOGPROBS = {
    "content": [
        {
            "token": ",",
            "logprob": -0.015,
            "top_logprobs": [{"token": ",", "logprob": -0.015}, {"token": " ", "logprob": -5.3}],
        },
        {
            "token": " ",
            "logprob": -0.003,
            "top_logprobs": [{"token": " ", "logprob": -0.003}, {"token": "  ", "logprob": -6.314}],
        },
    ]
}


def record(logprobs: dict[str, list[dict[str, object]]], **fields: object) -> RequestRecord:
    tokens = [
        TokenLogprob(
            token=str(item["token"]),
            logprob=item["logprob"],  # type: ignore[arg-type]
            top=[TopLogprob(**top) for top in item["top_logprobs"]],  # type: ignore[attr-defined]
        )
        for item in logprobs["content"]
    ]
    base: dict[str, object] = {
        "url": "http://x",
        "api": "chat",
        "stream": False,
        "model": "m",
        "send_ns": 0,
        "content": ", ",
        "logprobs": tokens,
        "usage": Usage(completion_tokens=2),
    }
    return RequestRecord.model_validate(base | fields)


def test_a_healthy_reply_agrees_with_itself() -> None:
    assert reply_consistency(REQUEST, record(CLEAN_CHAT_LOGPROBS)) == []


def test_a_chosen_logprob_that_its_own_top_entry_contradicts_fails() -> None:
    import copy

    broken = copy.deepcopy(CLEAN_CHAT_LOGPROBS)
    mismatch_chosen_top(broken, -0.5)
    problems = reply_consistency(REQUEST, record(broken))
    assert len(problems) == 1
    assert "token 0 (',') has logprob -0.0150 but -0.5150 in its own top_logprobs" in problems[0]


def test_a_greedy_token_other_than_the_top_is_not_held_against_the_server() -> None:
    """vLLM reports the raw distribution while its sampler applies the model's generation_config
    (a repetition penalty): an honest greedy reply may sample another token than the top."""
    penalised = {
        "content": [
            {
                "token": ",",
                "logprob": -1.2,
                "top_logprobs": [{"token": ".", "logprob": -0.4}, {"token": ",", "logprob": -1.2}],
            }
        ]
    }
    assert reply_consistency(REQUEST, record(penalised)) == []


def test_counts_beyond_max_tokens_or_below_the_events_fail() -> None:
    over = record(CLEAN_CHAT_LOGPROBS, usage=Usage(completion_tokens=8))
    assert "claimed 8 completion tokens for max_tokens 6" in reply_consistency(REQUEST, over)[0]
    events = [SseEvent(t_ns=i, content_chars=1) for i in range(7)]
    short = record(CLEAN_CHAT_LOGPROBS, stream=True, events=events)
    assert "7 content events carried 2 claimed tokens" in reply_consistency(REQUEST, short)[0]
    # text events are counted whatever per-event count the server put on them (an
    # under-reporting server puts its low count there too)
    zero = [SseEvent(t_ns=i, content_chars=1, tokens=0) for i in range(7)]
    hidden = record(CLEAN_CHAT_LOGPROBS, stream=True, events=zero)
    assert "7 content events carried 2 claimed tokens" in reply_consistency(REQUEST, hidden)[0]
    within = record(CLEAN_CHAT_LOGPROBS, stream=True, events=events[:6])
    assert reply_consistency(REQUEST, within) == []  # 2 claimed + 4 allowed


def test_a_reply_that_stops_by_length_short_of_max_tokens_fails() -> None:
    early = record(CLEAN_CHAT_LOGPROBS, finish_reason="length")  # 2 tokens, max_tokens 6
    assert (
        "ran to length at 2 completion tokens, under its max_tokens 6"
        in (reply_consistency(REQUEST, early)[0])
    )
    full = record(CLEAN_CHAT_LOGPROBS, finish_reason="length", usage=Usage(completion_tokens=6))
    assert reply_consistency(REQUEST, full) == []
    stopped = record(CLEAN_CHAT_LOGPROBS, finish_reason="stop")
    assert reply_consistency(REQUEST, stopped) == []


def test_a_reply_the_context_ended_is_honest_where_the_context_is_known() -> None:
    """The embedded llama-server with one slot of 512 tokens stopped a 490-token prompt's reply
    by length at 22 tokens whatever its max_tokens (100 or 400): exactly full."""
    asked = REQUEST.model_copy(update={"max_tokens": 100})
    usage = Usage(prompt_tokens=490, completion_tokens=22)
    ended = record(CLEAN_CHAT_LOGPROBS, finish_reason="length", usage=usage)
    assert reply_consistency(asked, ended, context_tokens=512) == []
    # the same reply with room left in the context, or where the context is not known
    assert "ran to length at 22" in reply_consistency(asked, ended, context_tokens=4096)[0]
    assert "ran to length at 22" in reply_consistency(asked, ended)[0]
    unknown_prompt = record(
        CLEAN_CHAT_LOGPROBS, finish_reason="length", usage=Usage(completion_tokens=22)
    )
    assert reply_consistency(asked, unknown_prompt, context_tokens=512) != []


def test_a_failed_reply_or_one_without_logprobs_has_nothing_to_disagree_on() -> None:
    plain = record({"content": []})
    assert reply_consistency(REQUEST, plain) == []
