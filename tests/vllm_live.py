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


def landed(raw: bytes) -> tuple[str, str]:
    """(reasoning, content) of a captured chat reply, whole or streamed, under vLLM's
    `reasoning` key."""
    text = raw.decode()
    if text.lstrip().startswith("{"):
        message = json.loads(text)["choices"][0]["message"]
        return message.get("reasoning") or "", message.get("content") or ""
    reasoning, content = [], []
    for line in text.splitlines():
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        for choice in json.loads(line[6:]).get("choices") or []:
            delta = choice.get("delta") or {}
            reasoning.append(delta.get("reasoning") or "")
            content.append(delta.get("content") or "")
    return "".join(reasoning), "".join(content)


def replay_contradictions(
    row: dict[str, Any], streamed: bool, reasoning: str, content: str
) -> list[str]:
    """What a live reply shows against the CPU replay's row for the same request
    (tests/fixtures/vllm/replay/), comparing only what holds whatever the model writes: the
    prompt's mode and the parser's first state, not the text."""
    parser_thinks = row["whole"]["reasoning"] is not None
    problems = []
    if row["prompt_mode"] == "thinking" and parser_thinks and not reasoning.strip():
        problems.append("thinking prompt, thinking parser, and no reasoning came back")
    if row["prompt_mode"] == "thinking" and not parser_thinks and reasoning.strip():
        problems.append("the parser starts in content, and reasoning came back")
    if row["prompt_mode"] == "chat" and streamed and reasoning.strip():
        problems.append("chat prompt, streamed, and reasoning came back")
    whole_parity_break = not streamed and row["whole"]["content"] is None
    if row["prompt_mode"] == "chat" and whole_parity_break and content.strip():
        problems.append("the replay's whole-reply parity break did not happen: content came back")
    return problems
