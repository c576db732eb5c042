"""`sparkrig workload import` and `soak --replay … --paced` as real subprocesses: the summary it
prints (and --json), a trace that is no file refused in one line, replay options that mean
nothing alone refused before any work, and a paced replay of an OpenTelemetry export run
against a local stand-in server (tests/gateway/fake_upstream.py), its receipt holding the pacing.
The sample lines are in the public formats (tests/wire/test_trace_import.py says where from)."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sparkrig.cli.soak import refuse_replay_mixups
from sparkrig.errors import UsageError
from tests.conftest import SPARKRIG
from tests.gateway.fake_upstream import FakeUpstream, serve_fake
from tests.wire.test_trace_import import CHAT, COMPLETION, MOONCAKE_README, TOOL, otlp


def sparkrig(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SPARKRIG, *args], capture_output=True, text=True, timeout=60, check=False
    )


def test_import_writes_the_workload_and_says_what_it_read(tmp_path: Path) -> None:
    trace, out = tmp_path / "mooncake.jsonl", tmp_path / "workload.jsonl"
    trace.write_text(MOONCAKE_README)
    shown = sparkrig("workload", "import", str(trace), "--out", str(out), "--json")
    assert shown.returncode == 0, shown.stderr
    summary = json.loads(shown.stdout)
    assert summary["format"] == "mooncake"
    assert (summary["records"], summary["span_s"]) == (2, 3.053)
    assert (summary["prompt_tokens"], summary["completion_tokens"]) == (13427, 78)
    assert summary["reused_prefix_tokens"] == 6144
    assert len(out.read_text().splitlines()) == 2
    again = sparkrig("workload", "import", str(trace), "--out", str(out))
    assert again.returncode == 2
    assert "already exists" in again.stderr
    plain = sparkrig("workload", "import", str(trace), "--out", str(out), "--force")
    assert "mooncake trace (detected): 2 requests, 0 skipped, span 3.053 s" in " ".join(
        plain.stdout.split()
    )


def test_a_trace_that_is_a_directory_is_refused_in_one_line(tmp_path: Path) -> None:
    refused = sparkrig("workload", "import", str(tmp_path), "--out", str(tmp_path / "w.jsonl"))
    assert refused.returncode == 2
    assert "is a directory, not a file" in refused.stderr
    assert "Traceback" not in refused.stderr


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--paced"], "--paced replays a trace's timing — add --replay FILE"),
        (["--replay", "TRACE", "--paced", "--speed", "0"], "0 is too small: use above 0"),
    ],
)
def test_replay_options_that_mean_nothing_alone_are_refused_before_any_work(
    tmp_path: Path, args: list[str], expected: str
) -> None:
    trace = tmp_path / "trace.jsonl"
    trace.write_text(MOONCAKE_README)
    refused = sparkrig(
        "soak", "http://127.0.0.1:9", *[str(trace) if a == "TRACE" else a for a in args]
    )
    assert refused.returncode == 2
    assert expected in " ".join(refused.stderr.split())
    assert "Traceback" not in refused.stderr


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"replay_format": "otel"}, "--replay-format names the format of --replay FILE"),
        ({"replay": Path("t"), "speed": 2.0}, "--speed sets a paced replay's pace"),
        ({"replay": Path("t"), "paced": True, "idle_gap": 5.0}, "keeps the trace's own gaps"),
    ],
)
def test_the_other_mixups_are_refused_by_the_same_check(
    options: dict[str, Any], expected: str
) -> None:
    given = {"replay": None, "replay_format": "auto", "paced": False, "speed": None}
    with pytest.raises(UsageError, match=expected):
        refuse_replay_mixups(**{**given, "idle_gap": None, **options})


async def test_a_paced_replay_of_an_otel_export_runs_and_its_receipt_holds_the_pacing(
    tmp_path: Path,
) -> None:
    trace, receipt = tmp_path / "spans.json", tmp_path / "soak.json"
    trace.write_text(json.dumps(otlp(CHAT, TOOL, COMPLETION)))  # 2 s apart, at --speed 4: 0.5 s
    upstream = FakeUpstream(reply_for=lambda body: "A plain reply of a few words.")
    async with serve_fake(upstream) as url:
        process = await asyncio.create_subprocess_exec(
            SPARKRIG,
            "soak",
            url,
            "--model",
            "m",
            "--replay",
            str(trace),
            "--paced",
            "--speed",
            "4",
            "--duration",
            "30",
            "--window",
            "30",
            "--receipt",
            str(receipt),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        out, _ = await asyncio.wait_for(process.communicate(), 60)
    text = " ".join(out.decode().split())
    assert process.returncode == 0, text
    assert "otel trace (detected): 2 requests, 1 skipped" in text
    assert "(otel, paced x4), open loop" in text
    assert "paced x4: 2 of 2 trace requests sent, offered 2/s" in text
    saved = json.loads(receipt.read_text())
    assert saved["pacing"]["sent"] == 2
    assert saved["pacing"]["trace_span_s"] == 0.5
    assert saved["windows"][-1]["end_s"] < 30  # the trace ended the run
    assert "paced x4: 2 of 2 trace requests sent" in receipt.with_suffix(".html").read_text()
    # by start time: the completion span (its output count as the budget), then the chat span
    # (its gen_ai.request.max_tokens)
    assert [b["max_tokens"] for b in upstream.received] == [8, 100]
