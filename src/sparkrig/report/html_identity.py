"""The identity block a receipt's HTML section opens with, read from the header every receipt
shares (src/sparkrig/receipts.py): where, what, when, and whether the run finished."""

from __future__ import annotations

from html import escape

from sparkrig.receipts import ReceiptHeader

_NOT_RECORDED = "not recorded (written by an older sparkrig)"


def identity_block(receipt: ReceiptHeader, *, extra: dict[str, str]) -> str:
    status = (
        '<span class="status complete">complete</span>'
        if receipt.complete
        else '<span class="status interrupted">interrupted or still running: incomplete</span>'
    )
    rows = {
        "model": receipt.model or "",
        "URL": receipt.base_url or "",
        "engine": receipt.engine or "not recognised",
        "engine build": receipt.engine_build
        or "not known (the server was not started by sparkrig)",
        "host": receipt.host or _NOT_RECORDED,
        "sparkrig": receipt.sparkrig_version or _NOT_RECORDED,
        "created": receipt.created_at.strftime("%Y-%m-%d %H:%M:%S %Z"),
        **extra,
    }
    items = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in rows.items())
    return f'<dl class="meta">{items}<dt>status</dt><dd>{status}</dd></dl>'
