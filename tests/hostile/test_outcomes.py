"""Silent success and lost files: a run that measured nothing fails and says so, empty replies
are a finding, and --out never replaces an existing file unless told to."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.hostile.conftest import one_line_failure, run_cli
from tests.hostile.fake_server import FakeServer

QUICK_BENCH = ["--suite", "decode", "--max-samples", "2", "--tokens", "8"]


@pytest.mark.parametrize(
    ("scenario", "says"),
    [
        ("http-500", "HTTP 500"),
        ("tokens-string", "usage.completion_tokens"),
        ("choices-number", "field choices"),
        ("empty-stop", "no rate"),
        ("ends-early", "[DONE]"),
    ],
)
def test_a_bench_that_measured_nothing_fails_and_its_receipt_says_so(
    scenario: str, says: str, fake: FakeServer, tmp_path: Path, state: Path
) -> None:
    out = tmp_path / "bench.json"
    line = one_line_failure(
        run_cli("bench", fake.url(scenario), *QUICK_BENCH, "--out", str(out)), progress=True
    )
    assert "nothing was measured" in line
    receipt = json.loads(out.read_text())
    assert receipt["measured"] is False
    assert any("nothing was measured" in warning for warning in receipt["warnings"])
    reasons = " ".join(d["reason"] for p in receipt["points"] for d in p["discarded"])
    assert says in line + reasons
    assert len(receipt["points"]) == 1  # stopped after the first point, not every point


def test_a_bench_with_some_malformed_replies_goes_on_and_reports_their_share(
    fake: FakeServer, tmp_path: Path, state: Path
) -> None:
    out = tmp_path / "bench.json"
    tolerant = ["--max-error-rate", "1"]  # every failure allowed: the run goes on to the end
    outcome = run_cli(
        "bench", fake.url("every-other-malformed"), *QUICK_BENCH, *tolerant, "--out", str(out)
    )
    # the fake's counts hold no witness, so no point is valid; none fails on its error rate
    line = one_line_failure(outcome, "no valid point", progress=True)
    assert "token counts do not hold" in line
    receipt = json.loads(out.read_text())
    assert receipt["measured"] is True
    share = [w for w in receipt["warnings"] if w.startswith("malformed replies")]
    assert share, receipt["warnings"]
    assert "%" in share[0]
    assert "malformed replies" in outcome.stdout
    reasons = [reason for point in receipt["points"] for reason in point["invalid_reasons"]]
    assert not any(reason.startswith("error rate") for reason in reasons), reasons


def test_a_bench_whose_every_point_fails_too_often_exits_non_zero(
    fake: FakeServer, tmp_path: Path, state: Path
) -> None:
    out = tmp_path / "bench.json"
    outcome = run_cli("bench", fake.url("every-other-malformed"), *QUICK_BENCH, "--out", str(out))
    line = one_line_failure(outcome, "no valid point", "failed", progress=True)
    assert "error rate above the ceiling" in line
    receipt = json.loads(out.read_text())
    assert receipt["measured"] is True  # it measured: the figures stand in the receipt, INVALID
    assert any(warning.startswith("error rate: ") for warning in receipt["warnings"])
    for point in receipt["points"]:
        coverage = point["coverage"]
        assert coverage["failed"] > 0
        assert coverage["error_rate"] > 0.01
        assert point["invalid"] is True
        assert f"{coverage['failed']} of {coverage['sent']} requests failed" in " ".join(
            point["invalid_reasons"]
        )


def test_check_quick_against_empty_replies_fails_determinism(
    fake: FakeServer, tmp_path: Path, state: Path
) -> None:
    out = tmp_path / "check.json"
    outcome = run_cli("check", fake.url("empty-choices"), "--quick", "--json", "--out", str(out))
    assert outcome.code == 1
    assert "Traceback" not in outcome.stderr
    results = {r["guard"]: r for r in json.loads(outcome.stdout)["results"]}
    determinism = results["determinism"]
    assert determinism["verdict"] == "FAIL"
    assert "empty" in determinism["evidence"]
    assert not any(r["verdict"] == "PASS" for r in results.values()), results


# --- --out never replaces a file without --force ----------------------------------------------

GOOD_RECEIPT = json.dumps({"kind": "sparkrig-bench", "note": "a good earlier run"})


@pytest.mark.parametrize("command", ["bench", "check"])
@pytest.mark.parametrize("scenario", ["http-500", "ok"])
def test_out_refuses_an_existing_file(
    command: str, scenario: str, fake: FakeServer, tmp_path: Path, state: Path
) -> None:
    out = tmp_path / "earlier.json"
    out.write_text(GOOD_RECEIPT)
    hits_before = len(fake.hits)
    one_line_failure(run_cli(command, fake.url(scenario), "--out", str(out)), "--force")
    assert out.read_text() == GOOD_RECEIPT
    assert fake.hits[hits_before:] == []  # refused before any request


def test_bench_refuses_to_replace_the_page_beside_its_receipt(
    fake: FakeServer, tmp_path: Path, state: Path
) -> None:
    """bench writes its report page beside the receipt (same name, .html): a page of the
    user's there is kept unless --force, refused before any request."""
    page = tmp_path / "run.html"
    page.write_text("my own page")
    hits_before = len(fake.hits)
    line = one_line_failure(run_cli("bench", fake.url("ok"), "--out", str(tmp_path / "run.json")))
    assert str(page) in line
    assert "--force" in line
    assert page.read_text() == "my own page"
    assert fake.hits[hits_before:] == []


def test_bench_refuses_an_out_named_like_its_page(fake: FakeServer, tmp_path: Path) -> None:
    """`--out run.html` would have had the page written over the receipt it reports."""
    line = one_line_failure(run_cli("bench", fake.url("ok"), "--out", str(tmp_path / "run.html")))
    assert "run.json" in line
    assert not (tmp_path / "run.html").exists()


@pytest.mark.parametrize("command", ["bench", "check"])
def test_out_refuses_a_directory(command: str, fake: FakeServer, tmp_path: Path) -> None:
    one_line_failure(run_cli(command, fake.url("ok"), "--out", str(tmp_path)), "directory")


@pytest.mark.parametrize("command", ["bench", "check"])
def test_out_refuses_a_link_even_to_nowhere(command: str, fake: FakeServer, tmp_path: Path) -> None:
    link = tmp_path / "link.json"
    link.symlink_to(tmp_path / "elsewhere.json")
    one_line_failure(run_cli(command, fake.url("ok"), "--out", str(link)), "--force")
    assert link.is_symlink()


# --- a baseline path that holds something else is never overwritten --------------------------


@pytest.mark.parametrize("record", [[], ["--record-baseline"]], ids=["judge", "record"])
@pytest.mark.parametrize(
    "content",
    [GOOD_RECEIPT, '{"kind": "sparkrig-check", "results": []}', "[1, 2]", "not json"],
    ids=["bench-receipt", "check-receipt", "list", "text"],
)
def test_a_baseline_of_another_kind_is_named_and_kept(
    record: list[str], content: str, fake: FakeServer, tmp_path: Path, state: Path
) -> None:
    baseline = tmp_path / "baseline.json"
    baseline.write_text(content)
    args = ["check", fake.url("ok"), "--quick", "--baseline", str(baseline), *record]
    line = one_line_failure(run_cli(*args, "--out", str(tmp_path / "c.json")), progress=True)
    assert str(baseline) in line
    assert "delete" not in line
    assert baseline.read_text() == content


@pytest.mark.parametrize(
    "existing", ["demo.json", "demo.bench.json", "demo.check.json", "demo.bench.html"]
)
def test_demo_refuses_an_existing_out_before_starting_an_engine(
    existing: str, tmp_path: Path
) -> None:
    """The record, the two receipts beside it and the bench's page: none is replaced."""
    kept = tmp_path / existing
    kept.write_text(GOOD_RECEIPT)
    line = one_line_failure(run_cli("demo", "--out", str(tmp_path / "demo.json")), "--force")
    assert str(kept) in line
    assert kept.read_text() == GOOD_RECEIPT


@pytest.mark.parametrize("existing", ["receipt", "page"])
def test_soak_refuses_to_replace_a_receipt_or_its_page_before_any_request(
    existing: str, fake: FakeServer, tmp_path: Path
) -> None:
    """A soak rewrites its receipt and the page beside it after every window; an earlier soak's
    pair is kept unless --force says otherwise."""
    receipt = tmp_path / "soak.json"
    kept = receipt if existing == "receipt" else receipt.with_suffix(".html")
    kept.write_text(GOOD_RECEIPT)
    hits_before = len(fake.hits)
    args = ["soak", fake.url("ok"), "--duration", "1", "--out", str(receipt)]  # as in bench
    one_line_failure(run_cli(*args), "--force", str(kept))
    assert kept.read_text() == GOOD_RECEIPT
    assert fake.hits[hits_before:] == []


def test_fabric_test_refuses_an_existing_out_before_touching_a_node(tmp_path: Path) -> None:
    out = tmp_path / "fabric.json"
    out.write_text(GOOD_RECEIPT)
    pair = Path(__file__).parents[2] / "examples" / "pair.toml"
    args = ["fabric", "test", str(pair), "--executor", "local", "--apply", "--out", str(out)]
    one_line_failure(run_cli(*args), "--force")
    assert out.read_text() == GOOD_RECEIPT
