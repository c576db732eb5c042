"""A check receipt as a section of the HTML report: identity, then one row per guard."""

from __future__ import annotations

from html import escape

from sparkrig.guards.receipt import CheckReceipt
from sparkrig.report.html_identity import identity_block
from sparkrig.report.receipt_kinds import section_for

_VERDICT_CLASS = {"PASS": "pass", "WARN": "warn", "FAIL": "bad", "SKIP": "warn"}
CHECK_CSS = """
.pass { color: #1d6b1d; font-weight: 600; }
td.evidence { max-width: 720px; overflow-wrap: anywhere; }
"""


@section_for(CheckReceipt)
def check_section(receipt: CheckReceipt, label: str) -> str:
    verdicts = [result.verdict for result in receipt.results]
    identity = identity_block(
        receipt,
        extra={
            "verdicts": f"{verdicts.count('PASS')} pass, {verdicts.count('FAIL')} fail, "
            f"{verdicts.count('SKIP')} skip",
            "baseline": receipt.baseline_path
            + (" (recorded by this run)" if receipt.recorded_baseline else ""),
        },
    )
    body = "".join(
        f'<tr><td>{escape(result.guard)}</td><td class="{_VERDICT_CLASS[result.verdict]}">'
        f'{result.verdict}</td><td class="evidence">{escape(result.evidence)}</td>'
        f'<td class="num">{"" if result.seconds is None else f"{result.seconds:.1f}"}</td></tr>'
        for result in receipt.results
    )
    return "\n".join(
        [
            f"<section>\n<h2>{escape(label)} · guards</h2>",
            identity,
            "<h3>guards</h3>",
            "<table><tr><th>guard</th><th>verdict</th><th>evidence</th><th>s</th></tr>"
            f"{body}</table>",
            "</section>",
        ]
    )
