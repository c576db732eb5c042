"""`check --against`: replies identical to an earlier build's receipt PASS, near-ties only WARN,
a changed answer FAILs naming its prompt; a receipt that cannot be compared is refused in one
line. The live half runs the exact guard on the real llama-server, twice and through the
gateway's wrong-answers fault."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from sparkrig.client.records import TokenLogprob, TopLogprob
from sparkrig.errors import UsageError
from sparkrig.gateway import Fault, GatewayConfig, running_gateway
from sparkrig.guards.battery import run_battery, same_server_kind
from sparkrig.guards.context import CheckSettings
from sparkrig.guards.identity import (
    KeptOutput,
    OutputKey,
    against_verdict,
    load_previous_receipt,
    shared_top_kl,
)
from sparkrig.guards.receipt import CheckReceipt, save_check_receipt
from sparkrig.guards.verdict import passed
from sparkrig.launch.local import LocalInstance


def _token(text: str, *top: tuple[str, float]) -> TokenLogprob:
    return TokenLogprob(
        token=text, logprob=top[0][1], top=[TopLogprob(token=t, logprob=lp) for t, lp in top]
    )


def _output(prompt: str, tokens: list[TokenLogprob]) -> dict[OutputKey, KeptOutput]:
    output = KeptOutput(
        guard="exact",
        prompt=prompt,
        stream=True,
        max_tokens=24,
        content="".join(t.token for t in tokens),
        logprobs=tokens,
    )
    return {output.key: output}


def test_the_kl_estimate_is_over_the_shared_top_tokens_renormalised() -> None:
    a = _token("x", ("x", math.log(0.6)), ("y", math.log(0.2)), ("z", math.log(0.2)))
    b = _token("x", ("x", math.log(0.5)), ("y", math.log(0.3)), ("w", math.log(0.2)))
    p, q = (0.75, 0.25), (0.5 / 0.8, 0.3 / 0.8)  # {x, y} renormalised on each side
    expected = sum(pi * math.log(pi / qi) for pi, qi in zip(p, q, strict=True))
    assert shared_top_kl(a, b) == pytest.approx(expected)
    assert shared_top_kl(a, a) == pytest.approx(0.0)
    assert shared_top_kl(a, _token("x", ("x", 0.0))) is None  # one shared token tells nothing


def test_identical_passes_a_near_tie_warns_a_confident_change_fails() -> None:
    sure = [_token(" Paris", (" Paris", -0.01), (" Lyon", -5.0)), _token(".", (".", -0.01))]
    previous = _output("What is the capital of France?", sure)
    assert against_verdict(previous, previous, "old.json").verdict == "PASS"
    start = [_token(" w", (" w", -0.01), (" v", -6.0))] * 12  # agreeing: 12 of 13 positions
    tie = [*start, _token(" A", (" A", -0.69), (" B", -0.70))]
    swapped = [*start, _token(" B", (" B", -0.69), (" A", -0.70))]
    warned = against_verdict(_output("Pick", tie), _output("Pick", swapped), "old.json")
    assert warned.verdict == "WARN", warned.evidence
    assert warned.details["top_token_agreement"] == pytest.approx(12 / 13)
    changed = [_token(" Lyon", (" Lyon", -0.01), (" Nice", -5.0)), _token(".", (".", -0.01))]
    result = against_verdict(previous, _output("What is the capital of France?", changed), "o")
    assert result.verdict == "FAIL"
    assert "exact 'What is the capital of France?' (chat, streamed) changed at char 1" in (
        result.evidence
    )
    assert result.details["top_token_agreement"] == 0.0
    nothing = against_verdict(previous, _output("another prompt", sure), "old.json")
    assert nothing.verdict == "FAIL"
    assert "no reply to compare" in nothing.evidence


def _receipt(model: str = "m", engine: str | None = "llamacpp") -> CheckReceipt:
    return CheckReceipt(
        base_url="http://x",
        model=model,
        engine=engine,
        settings=CheckSettings(),
        guards=[],
        baseline_path="b",
    )


def test_a_receipt_that_cannot_be_compared_is_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="is a directory, not a file"):
        load_previous_receipt(tmp_path)
    damaged = tmp_path / "damaged.check.json"
    damaged.write_text('{"kind": "sparkrig-check", "schema_version": 1, "model": 3}')
    with pytest.raises(UsageError, match="damaged check receipt"):
        load_previous_receipt(damaged)
    older = _receipt()
    older.results.append(passed("exact", "4/5 right", replies={"q": "a"}))  # no outputs kept
    save_check_receipt(older, tmp_path / "older.json")
    with pytest.raises(UsageError, match="keeps no replies to compare with"):
        load_previous_receipt(tmp_path / "older.json")
    bad_output = _receipt()
    bad_output.results.append(passed("exact", "", outputs=[{"guard": "exact"}]))
    save_check_receipt(bad_output, tmp_path / "bad.json")
    with pytest.raises(UsageError, match="damaged check receipt \\(a kept reply"):
        load_previous_receipt(tmp_path / "bad.json")
    with pytest.raises(UsageError, match="checked model other, this server serves m"):
        same_server_kind(tmp_path / "o.json", _receipt(model="other"), _receipt())
    with pytest.raises(UsageError, match="checked a vllm server, this one is llamacpp"):
        same_server_kind(tmp_path / "o.json", _receipt(engine="vllm"), _receipt())


@pytest.mark.engine
async def test_the_same_server_passes_against_itself_and_wrong_answers_fail(
    llama_server: LocalInstance, tmp_path: Path
) -> None:
    async def check(url: str, name: str, against: Path | None = None) -> CheckReceipt:
        previous = None if against is None else (against, load_previous_receipt(against))
        return await run_battery(
            url,
            settings=CheckSettings(),
            guards=["exact"],
            out_path=tmp_path / name,
            baseline_path=tmp_path / "baseline.json",
            against=previous,
            reraise=True,
        )

    first = tmp_path / "first.json"
    await check(llama_server.base_url, first.name)
    again = await check(llama_server.base_url, "again.json", against=first)
    result = again.results[-1]
    assert (result.guard, result.verdict) == ("against", "PASS"), result.evidence
    assert result.details["top_token_agreement"] == 1.0
    assert again.against == str(first)
    config = GatewayConfig(faults=[Fault.WRONG_ANSWERS])
    async with running_gateway(llama_server.base_url, config) as url:
        wrong = await check(url, "wrong.json", against=first)
    result = wrong.results[-1]
    assert result.verdict == "FAIL", result.evidence
    assert "exact 'Count from 1 to 12, separated by commas.'" in result.evidence
