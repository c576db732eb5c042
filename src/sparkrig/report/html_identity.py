"""The identity block both receipt kinds open their HTML section with: where, what, when, and
whether the run finished."""

from __future__ import annotations

from datetime import datetime
from html import escape


def identity_block(
    *,
    model: str,
    base_url: str,
    engine: str | None,
    engine_build: str | None,
    host: str,
    sparkrig_version: str,
    created_at: datetime,
    complete: bool,
    extra: dict[str, str],
) -> str:
    status = (
        '<span class="status complete">complete</span>'
        if complete
        else '<span class="status interrupted">interrupted or still running: incomplete</span>'
    )
    rows = {
        "model": model,
        "URL": base_url,
        "engine": engine or "not recognised",
        "engine build": engine_build or "not known (the server was not started by sparkrig)",
        "host": host,
        "sparkrig": sparkrig_version,
        "created": created_at.strftime("%Y-%m-%d %H:%M:%S %Z"),
        **extra,
    }
    items = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in rows.items())
    return f'<dl class="meta">{items}<dt>status</dt><dd>{status}</dd></dl>'
