"""A check receipt as a section of the HTML report: identity, then one row per guard."""

from __future__ import annotations

from html import escape

from sparkrig.guards.receipt import CheckReceipt
from sparkrig.report.html_identity import identity_block

_VERDICT_CLASS = {"PASS": "pass", "WARN": "warn", "FAIL": "bad", "SKIP": "warn"}
CHECK_CSS = """
.pass { color: #1d6b1d; font-weight: 600; }
td.evidence { max-width: 720px; overflow-wrap: anywhere; }
"""


def check_section(receipt: CheckReceipt, label: str) -> str:
    verdicts = [result.verdict for result in receipt.results]
    identity = identity_block(
        model=receipt.model,
        base_url=receipt.base_url,
        engine=receipt.engine,
        host=receipt.host,
        engine_build=receipt.engine_build,
        sparkrig_version=receipt.sparkrig_version,
        created_at=receipt.created_at,
        complete=receipt.complete,
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
