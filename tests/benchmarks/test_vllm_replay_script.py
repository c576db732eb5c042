"""benchmarks/vllm_replay/replay.py without vLLM: the requests it replays are the think group's
own plus its extras, and the committed record replays every one of them on every server (a change
to the think group's requests that is not replayed fails here)."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT / "benchmarks" / "vllm_replay"))
replay = importlib.import_module("replay")
RECORD = json.loads((ROOT / "tests/fixtures/vllm/replay/think-0.26.0.json").read_text())


def test_the_replayed_requests_are_the_think_groups_and_the_extras() -> None:
    capture = importlib.import_module("capture")
    think = {
        name
        for name, (method, path, _) in capture.think_asks("m", "think").items()
        if method == "POST" and path == "/v1/chat/completions"
    }
    asks = replay.chat_asks()
    assert set(asks) == think | set(replay.EXTRA_ASKS)
    assert all(
        body["messages"] == [{"role": "user", "content": "What's 1 + 1?"}] for body in asks.values()
    )


def test_the_record_replays_every_request_on_every_server() -> None:
    asks = replay.chat_asks()
    rows = {(row["server"], row["ask"]): row for row in RECORD["rows"]}
    assert set(rows) == {(server, ask) for server in replay.SERVERS for ask in asks}
    for (_, ask), row in rows.items():
        sent = {k: v for k, v in asks[ask].items() if k not in ("model", "messages")}
        assert row["request"] == sent, ask
    assert RECORD["provenance"]["thinking_reply"] == replay.THINKING_REPLY


@pytest.mark.parametrize(
    ("prompt", "mode"),
    [
        ("<|im_start|>assistant\n<think>\n", "thinking"),
        ("<|im_start|>assistant\n<think>\n\n</think>\n\n", "chat"),
        ("1?<｜Assistant｜></think>", "chat"),
        ("<|im_start|>assistant\n", "neither"),
    ],
)
def test_a_prompt_is_in_the_mode_its_last_tag_says(prompt: str, mode: str) -> None:
    assert replay.prompt_mode(prompt) == mode


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ([], "run benchmarks/vllm_replay/setup.sh"),  # this Python has no vLLM
        (["--gguf", "/no/such.gguf"], "--gguf /no/such.gguf: no such file"),
    ],
)
def test_bad_input_is_one_line_naming_the_fix(tmp_path: Path, extra: list[str], says: str) -> None:
    import subprocess

    script = ROOT / "benchmarks" / "vllm_replay" / "replay.py"
    run = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "out.json"), *extra],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 2
    assert says in run.stderr
    assert "Traceback" not in run.stderr
    assert not (tmp_path / "out.json").exists()
