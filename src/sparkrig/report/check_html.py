"""A check receipt as a section of the HTML report: identity, then one row per guard."""

from __future__ import annotations

from html import escape

from sparkrig.guards.receipt import CheckReceipt

_VERDICT_CLASS = {"PASS": "pass", "FAIL": "bad", "SKIP": "warn"}
CHECK_CSS = """
.pass { color: #1d6b1d; font-weight: 600; }
td.evidence { max-width: 720px; overflow-wrap: anywhere; }
"""


def check_section(receipt: CheckReceipt, label: str) -> str:
    verdicts = [result.verdict for result in receipt.results]
    status = (
        '<span class="status complete">complete</span>'
        if receipt.complete
        else '<span class="status interrupted">interrupted or still running: incomplete</span>'
    )
    rows = {
        "model": receipt.model,
        "URL": receipt.base_url,
        "engine": receipt.engine or "not recognised",
        "host": receipt.host,
        "sparkrig": receipt.sparkrig_version,
        "created": receipt.created_at.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "verdicts": f"{verdicts.count('PASS')} pass, {verdicts.count('FAIL')} fail, "
        f"{verdicts.count('SKIP')} skip",
        "baseline": receipt.baseline_path
        + (" (recorded by this run)" if receipt.recorded_baseline else ""),
    }
    meta = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in rows.items())
    body = "".join(
        f'<tr><td>{escape(result.guard)}</td><td class="{_VERDICT_CLASS[result.verdict]}">'
        f'{result.verdict}</td><td class="evidence">{escape(result.evidence)}</td>'
        f'<td class="num">{"" if result.seconds is None else f"{result.seconds:.1f}"}</td></tr>'
        for result in receipt.results
    )
    return "\n".join(
        [
            f"<section>\n<h2>{escape(label)} · guards</h2>",
            f'<dl class="meta">{meta}<dt>status</dt><dd>{status}</dd></dl>',
            "<h3>guards</h3>",
            "<table><tr><th>guard</th><th>verdict</th><th>evidence</th><th>s</th></tr>"
            f"{body}</table>",
            "</section>",
        ]
    )
