"""The HTML report as a person sees it: rendered by real headless Chromium, every chart drawn,
no script errors, one self-contained file."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkrig.report.html_report import render_report
from tests.report.browser import find_chromium, view_page
from tests.report.test_html_report import _check_receipt, _receipt

CHARTS_IN_THE_BENCH_PAGE = 4  # decode, concurrency, spec acceptance, prefill
MIN_INK = 0.01  # a drawn chart puts bars, axes and labels on at least 1% of its box


@pytest.fixture(scope="module")
def chromium() -> str:
    found = find_chromium()
    if found is None:
        pytest.skip(
            "Chromium is not installed — `make test` installs it (scripts/ensure-test-tools)"
        )
    return found


def test_every_chart_draws_and_the_page_raises_no_error(tmp_path: Path, chromium: str) -> None:
    page = tmp_path / "report.html"
    page.write_text(render_report([_receipt(), _check_receipt()], names=["b.json", "c.json"]))
    seen = view_page(page, chromium)
    (tmp_path / "report.png").write_bytes(seen.screenshot)  # kept for a failing run's reader
    assert seen.screenshot.startswith(b"\x89PNG")
    assert seen.errors == []
    assert len(seen.charts) == CHARTS_IN_THE_BENCH_PAGE
    for box, ink in zip(seen.charts, seen.ink, strict=True):
        assert box["width"] > 100, box
        assert box["height"] > 50, box
        assert ink > MIN_INK, (box, ink)


def test_a_blank_chart_is_seen_as_blank(tmp_path: Path, chromium: str) -> None:
    """The ink measure can fail: an empty SVG of the same size has none."""
    page = tmp_path / "blank.html"
    page.write_text(
        '<!DOCTYPE html><html><body style="background:#fff">'
        '<svg width="400" height="200" xmlns="http://www.w3.org/2000/svg"></svg></body></html>'
    )
    seen = view_page(page, chromium)
    assert len(seen.charts) == 1
    assert seen.ink[0] < MIN_INK


def test_a_script_error_is_seen(tmp_path: Path, chromium: str) -> None:
    page = tmp_path / "broken.html"
    page.write_text("<!DOCTYPE html><html><body><script>undefinedCall();</script></body></html>")
    seen = view_page(page, chromium)
    assert seen.errors, "a page that throws must be reported"
