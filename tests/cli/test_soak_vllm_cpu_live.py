"""`sparkrig soak` against the session's real CPU vLLM (tests/vllm_cpu.py: 0.32.0, the bundled
model, no tool parser): the one tool-call probe comes back with vLLM's own 400, the soak leaves
tool calls out with those words and the fix, and loses no request. Short on purpose: 10 s, one
stream; its first run took 120 s with the vLLM boot (JIT cache warm) on the 2-core machine."""

from __future__ import annotations

from pathlib import Path

from sparkrig.bench.soak_receipt import load_soak_receipt
from tests.tool_refusals import VLLM_WORDS
from tests.vllm_cpu import VllmCpuServer


def test_a_soak_of_vllm_without_a_tool_parser_leaves_tool_calls_out(
    vllm_cpu: VllmCpuServer, tmp_path: Path
) -> None:
    receipt = tmp_path / "soak.json"
    result = vllm_cpu.sparkrig(
        "soak",
        vllm_cpu.base_url,
        "--duration",
        "10",
        "--window",
        "10",
        "--concurrency",
        "1",
        "--receipt",
        str(receipt),
        timeout=180,
    )
    out = " ".join((result.stdout + result.stderr).split())
    done = load_soak_receipt(receipt)

    (left,) = done.left_out
    assert (left.kind, left.by) == ("tool_call", "server"), out
    assert left.server_said == f"HTTP 400 {VLLM_WORDS!r}"  # vLLM's words, not the stand-in's
    assert "--enable-auto-tool-choice --tool-call-parser NAME" in out
    assert done.kinds == ["json", "code", "summary", "prose"]
    assert done.requests > 0
    assert (done.status, done.lost) == ("complete", 0), done.problems
    # exit 0 but for a bad output of the 135M model, whose words are not this test's subject
    # (the first run: 8 requests in 10 s, 0 lost, 0 bad, exit 0)
    assert result.returncode == (1 if done.bad_outputs else 0), out
