"""The live vLLM 0.26.0 captures of tests/fixtures/vllm/live/ (its README says which request made
each), and a loopback server that answers a captured request with the reply's own status,
content type and bytes, so tests read them through sparkrig's real HTTP client."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from aiohttp import web

from tests.http_servers import serve_app

LIVE = Path(__file__).parent / "fixtures" / "vllm" / "live"
# plain: right after start; after: after check ×3, bench and peer run; ngram: the speculative
# server right after start; ngram-after: after its spec bench
LABELS = ("plain", "after", "ngram", "ngram-after")
# enforcer: a later plain server whose vLLM had lm-format-enforcer (README: only the json-schema
# reply is kept)
# replies that came back byte-identical under all four labels: kept once, as plain-*
SAME_IN_EVERY_LABEL = frozenset(
    {"chat-json-schema-stream", "error-400-max-tokens", "error-404-model", "tokenize"}
)


def capture(label: str, name: str) -> bytes:
    """The body vLLM sent for request `name` under `label`, byte for byte."""
    kept = "plain" if name in SAME_IN_EVERY_LABEL and label in LABELS else label
    return (LIVE / f"{kept}-{name}.txt").read_bytes()


def asked(label: str, name: str) -> dict[str, Any]:
    """What capture.py recorded of request `name`: method, path, request body, status, type."""
    index = json.loads((LIVE / f"{label}-index.json").read_text())
    (entry,) = [entry for entry in index if entry["name"] == name]
    return dict(entry)


@asynccontextmanager
async def replaying(label: str, *names: str) -> AsyncIterator[str]:
    """A server at the yielded base URL that answers each captured request's method and path
    with the captured reply (one block), and nothing else."""
    app = web.Application()
    for name in names:
        entry = asked(label, name)
        body = capture(label, name)

        async def reply(
            _: web.Request, body: bytes = body, entry: dict[str, Any] = entry
        ) -> web.Response:
            headers = {"Content-Type": entry["content_type"]} if entry["content_type"] else {}
            return web.Response(body=body, status=entry["status"], headers=headers)

        app.router.add_route(entry["method"], entry["path"], reply)
    async with serve_app(app) as url:
        yield url
