"""`sparkrig report`: one offline HTML page from bench receipts, built from constructed receipts."""

from __future__ import annotations

import os
import re
import subprocess
from html import escape
from pathlib import Path

import pytest
from rich.console import Console

from sparkrig.bench.count_witness import CountWitness
from sparkrig.bench.point import BenchSettings
from sparkrig.bench.point_result import PointResult, RequestSummary, Sample
from sparkrig.bench.receipt import BenchReceipt, save_receipt
from sparkrig.bench.speculative import SpecAccounting
from sparkrig.bench.statistics import summarize
from sparkrig.cli.views.bench_table import bench_table
from sparkrig.guards.context import CheckSettings
from sparkrig.guards.receipt import CheckReceipt, save_check_receipt
from sparkrig.guards.verdict import GuardResult
from sparkrig.report.html_report import render_report
from sparkrig.report.svg_charts import Bar, bar_chart, position_chart
from tests.conftest import SPARKRIG

BASE_URL = "http://127.0.0.1:8080"
INVALID_DECODE_MEDIAN = 4321.0  # numbers of invalid points: they must never reach the page
INVALID_SPEC_MEDIAN = 8642.0
INVALID_SPEC_CEILING = 9876.5
REMOTE_REFERENCE = re.compile(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", re.IGNORECASE)


def _point(
    suite: str,
    name: str,
    values: list[float],
    per_stream: float | None = None,
    *,
    degenerate: tuple[str, ...] = (),
    spec: SpecAccounting | None = None,
) -> PointResult:
    request = RequestSummary(
        prompt_sha256="0" * 16,
        completion_tokens=128,
        token_source="usage",
        ttft_s=0.012,
        decode_tps=per_stream if per_stream is not None else values[0],
        e2e_s=1.0,
        finish_reason="length",
        first_output_ns=0,
        last_output_ns=1,
    )
    return PointResult(
        suite=suite,
        name=name,
        metric=f"{suite} tok/s",
        summary=summarize(values),
        samples=[Sample(value=v, requests=[request], degenerate=list(degenerate)) for v in values],
        invalid=bool(degenerate),
        spec=spec,
    )


def _spec(ceiling: float = 60.0) -> SpecAccounting:
    return SpecAccounting(
        drafts=100,
        draft_tokens=300,
        accepted_tokens=180,
        acceptance_rate=0.6,
        per_position_rate=[0.9, 0.6, 0.3],
        mean_draft_length=3.0,
        accepted_per_step=1.8,
        tokens_per_step=2.8,
        steps_per_s=ceiling / 4,
        ceiling_tps=ceiling,
    )


def _receipt(model: str = "smollm2-135m", complete: bool = True) -> BenchReceipt:
    loop = ("repeats one 12-token span 9 times",)
    return BenchReceipt(
        base_url=BASE_URL,
        model=model,
        engine="llama.cpp",
        suites=["decode", "concurrency", "spec", "prefill"],
        settings=BenchSettings(),
        complete=complete,
        warnings=["server still busy & retried"],
        points=[
            _point("decode", "count", [140.0, 141.0, 139.5]),
            _point("decode", "prose", [INVALID_DECODE_MEDIAN] * 3, degenerate=loop),
            _point("concurrency", "c=1", [147.0, 148.0, 147.5], per_stream=147.5),
            _point("concurrency", "c=4", [127.0, 128.0, 127.5], per_stream=31.8),
            _point("spec", "structured", [51.0, 52.0, 51.5], spec=_spec()),
            _point(
                "spec",
                "code",
                [INVALID_SPEC_MEDIAN] * 3,
                degenerate=loop,
                spec=_spec(INVALID_SPEC_CEILING),
            ),
            _point("prefill", "512 cold", [2100.0, 2150.0, 2120.0]),
        ],
    )


def test_the_page_shows_every_point_and_charts_without_any_remote_resource() -> None:
    receipt = _receipt()
    page = render_report([receipt], names=["bench-1.json"])
    assert page.startswith("<!DOCTYPE html>")
    assert page.count("<svg") == 4  # decode, concurrency, spec acceptance, prefill
    assert "smollm2-135m" in page
    assert "bench-1.json" in page
    for point in receipt.points:
        assert f">{escape(point.name)}<" in page
    assert not REMOTE_REFERENCE.search(page)
    assert "url(" not in page
    assert "@import" not in page
    assert "<script" not in page.lower()
    # the receipt's own URL is shown as text; nothing else may point off the file
    text_only = page.replace(BASE_URL, "")
    assert "http://" not in text_only
    assert "https://" not in text_only
    assert "server still busy &amp; retried" in page
    assert "complete" in page


def test_invalid_points_read_invalid_and_never_show_their_numbers() -> None:
    page = render_report([_receipt()])
    assert "INVALID: degenerate output (repeats one 12-token span 9 times)" in page
    assert page.count(">invalid<") >= 2  # table cells of both invalid points
    for number in (INVALID_DECODE_MEDIAN, INVALID_SPEC_MEDIAN, INVALID_SPEC_CEILING):
        assert f"{number:.0f}" not in page
        assert f"{number:g}" not in page


def test_hostile_text_is_escaped() -> None:
    receipt = _receipt(model="<script>alert(1)</script>")
    receipt.points[0].name = "<img src=x onerror=alert(1)>"
    page = render_report([receipt], names=['"><b>bold</b>'])
    assert "<script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<img" not in page
    assert "<b>bold</b>" not in page


def test_several_receipts_follow_one_another_under_their_file_names() -> None:
    page = render_report(
        [_receipt("model-a"), _receipt("model-b", complete=False)], names=["a.json", "b.json"]
    )
    first, second = page.index("<h2>a.json</h2>"), page.index("<h2>b.json</h2>")
    assert first < page.index("model-a", first) < second < page.index("model-b", second)
    assert "interrupted or still running" not in page[first:second]
    assert "interrupted or still running" in page[second:]


def test_a_text_bar_does_not_stretch_the_axis() -> None:
    svg = bar_chart(
        "t", "x", "y", [Bar("ok", 100.0, 95.0, 105.0), Bar("bad", "invalid", 4000.0, 5000.0)]
    )
    assert ">invalid<" in svg
    assert ">125<" in svg  # axis top: 105 × 1.1 rounded up to a step of 25
    assert "4000" not in svg
    assert "5000" not in svg


def test_position_chart_spans_zero_to_one() -> None:
    svg = position_chart("acceptance", {"code": [0.9, 0.5], "prose": "invalid"})
    assert ">1.0<" in svg
    assert ">position 1<" in svg
    assert svg.count(">invalid<") == 2


def _run(*args: str, state: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SPARKRIG_STATE_DIR": str(state)}
    return subprocess.run(
        [SPARKRIG, "report", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_cli_writes_the_page_next_to_the_receipt(tmp_path: Path) -> None:
    receipt_path = tmp_path / "bench-1.json"
    save_receipt(_receipt(), receipt_path)
    result = _run(str(receipt_path), state=tmp_path / "state")
    assert result.returncode == 0, result.stderr
    page = (tmp_path / "bench-1.html").read_text()
    assert "<svg" in page
    assert f"report written to {tmp_path / 'bench-1.html'}" in result.stdout.replace("\n", "")


def test_cli_writes_to_out(tmp_path: Path) -> None:
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    save_receipt(_receipt("model-a"), first)
    save_receipt(_receipt("model-b"), second)
    out = tmp_path / "pages" / "both.html"
    result = _run(str(first), str(second), "--out", str(out), state=tmp_path / "state")
    assert result.returncode == 0, result.stderr
    page = out.read_text()
    assert "model-a" in page
    assert "model-b" in page


def _check_receipt() -> CheckReceipt:
    return CheckReceipt(
        base_url=BASE_URL,
        model="m",
        settings=CheckSettings(),
        guards=["exact", "garble"],
        baseline_path="/tmp/baseline.json",
        complete=True,
        results=[
            GuardResult(guard="exact", verdict="PASS", evidence="4/5 right", seconds=1.0),
            GuardResult(guard="garble", verdict="FAIL", evidence="<|im_end|> leaked"),
        ],
    )


def test_a_check_receipt_joins_the_page_and_the_terminal(tmp_path: Path) -> None:
    bench, check = tmp_path / "bench.json", tmp_path / "check.json"
    save_receipt(_receipt(), bench)
    save_check_receipt(_check_receipt(), check)
    result = _run(str(bench), str(check), state=tmp_path / "state")
    assert result.returncode == 0, result.stderr
    page = (tmp_path / "bench.html").read_text()
    assert "check.json · guards" in page
    assert escape("<|im_end|> leaked") in page  # evidence is escaped, never markup
    assert "1 pass, 1 fail, 0 skip" in page
    assert "garble" in result.stdout
    assert "FAIL" in result.stdout


@pytest.mark.parametrize(
    "content",
    [
        None,
        "not json",
        '{"kind": "something-else"}',
        '{"kind": "sparkrig-check", "schema_version": 9}',
        '{"kind": "sparkrig-check"}',
    ],
)
def test_cli_bad_receipt_is_one_error_line(tmp_path: Path, content: str | None) -> None:
    path = tmp_path / "receipt.json"
    if content is not None:
        path.write_text(content)
    result = _run(str(path), state=tmp_path / "state")
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error:")
    assert " — " in lines[0]
    assert not (tmp_path / "receipt.html").exists()


def test_cli_refuses_to_overwrite_a_receipt(tmp_path: Path) -> None:
    path = tmp_path / "bench.json"
    save_receipt(_receipt(), path)
    result = _run(str(path), "--out", str(path), state=tmp_path / "state")
    assert result.returncode != 0
    assert result.stderr.startswith("error:")
    assert path.read_text().startswith("{")


def test_an_imprecise_point_is_flagged_in_the_page_and_the_table() -> None:
    receipt = _receipt()
    receipt.points[0].imprecise = True
    receipt.points[0].warnings.append("imprecise: round 1 ended at 12 samples with ±5.5%")
    page = render_report([receipt])
    assert page.count("imprecise: ended without reaching the precision asked for") == 1
    assert "imprecise: round 1 ended at 12 samples with ±5.5%" in page
    # the declared looks and the rounds are part of the settings shown (defaults: 3 and 4 of
    # 3 rounds)
    assert "samples 3–4, looks at 3, 4" in page
    assert "· 3 rounds" in page
    console = Console(record=True, width=300)
    console.print(bench_table(receipt))
    rows = [line for line in console.export_text().splitlines() if "imprecise" in line]
    assert len(rows) == 1
    assert "count" in rows[0]


def test_a_client_limited_point_is_flagged_in_the_page_and_the_table() -> None:
    receipt = _receipt()
    receipt.points[2].client_limited = True
    page = render_report([receipt])
    assert page.count("client-limited: a client process was near one full core") == 1
    console = Console(record=True, width=300)
    console.print(bench_table(receipt))
    rows = [line for line in console.export_text().splitlines() if "client-limited" in line]
    assert len(rows) == 1
    assert "c=1" in rows[0]


def test_counts_that_do_not_hold_read_invalid_with_both_numbers() -> None:
    receipt = _receipt()
    point = receipt.points[0]  # decode/count, 140 tok/s claimed
    finding = "token count: the server claimed 160 completion tokens for max_tokens 128"
    point.samples[0].accounting = [finding]
    point.invalid, point.invalid_reasons = True, ["token counts do not hold"]
    page = render_report([receipt])
    assert f"INVALID: token counts do not hold ({finding}" in page
    assert "140.0" not in page  # the count row's median is not shown


def test_the_logprobs_witness_finding_is_shown_with_the_invalid_point() -> None:
    receipt = _receipt()
    point = receipt.points[0]
    finding = (
        "logprobs witness: token count: the server claimed 160 completion tokens, its reply "
        "carried 128 logprobs entries (one per generated token)"
    )
    point.witness = CountWitness(claimed=160, logprob_entries=128, findings=[finding])
    point.invalid, point.invalid_reasons = True, ["token counts do not hold"]
    assert f"INVALID: token counts do not hold ({finding}" in render_report([receipt])


def test_re_tokenized_count_notes_are_counted_never_invalid() -> None:
    receipt = _receipt()
    point = receipt.points[0]  # decode/count, 140 tok/s
    note = (
        "re-tokenized: the server claimed 128 completion tokens, its text re-tokenizes to 119 "
        "(a note, not a count check)"
    )
    point.samples[0].notes = [note]
    point.samples[1].notes = [note]
    page = render_report([receipt])
    assert "2 re-tokenized count notes" in page
    assert "140.0" in page
    console = Console(record=True, width=300)
    console.print(bench_table(receipt))
    rows = [line for line in console.export_text().splitlines() if "count notes" in line]
    assert len(rows) == 1
    assert "2 re-tokenized count notes" in rows[0]
    assert "INVALID" not in rows[0]
    assert "140.0" in rows[0]


def test_report_replaces_its_own_page_and_no_other_file_without_force(tmp_path: Path) -> None:
    """Rerunning report refreshes its page; a file of the user's at --out (or where the
    default page goes) is kept unless --force, and the refusal names the fix in one line."""
    receipt_path = tmp_path / "bench-1.json"
    save_receipt(_receipt(), receipt_path)
    state = tmp_path / "state"
    for _ in range(2):
        assert _run(str(receipt_path), state=state).returncode == 0
    notes = tmp_path / "notes.html"
    notes.write_text("<html><title>my notes</title></html>")
    for args in (["--out", str(notes)], []):
        if not args:  # the default page: the receipt's name with .html
            notes = tmp_path / "bench-1.html"
            notes.write_text("my own page")
        refused = _run(str(receipt_path), *args, state=state)
        assert refused.returncode != 0
        lines = refused.stderr.strip().splitlines()
        assert len(lines) == 1, refused.stderr
        assert "is not a sparkrig report" in lines[0]
        assert "--force" in lines[0]
        assert "my" in notes.read_text()
    forced = _run(str(receipt_path), "--force", state=state)
    assert forced.returncode == 0, forced.stderr
    assert "<svg" in notes.read_text()
