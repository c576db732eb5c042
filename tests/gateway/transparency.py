"""The same request sent to an engine directly and through `gateway serve`, and what may differ.

An answer is compared whole: status, the headers (less the hop-by-hop ones and those each
connection sets), and the body — JSON field by field with the fields that change from one
answer to the next left aside (ids, creation times, timings), a stream event by event in the
same way, `/metrics` by its series names (counters move between two scrapes), anything else
byte for byte. A difference that two direct answers show too is the engine's, not the gateway's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

import aiohttp

from sparkrig.wire.openai import json_object

Compare = Literal["json", "stream", "series", "bytes", "shape"]
# change from one answer to the next on the engine itself
VOLATILE = frozenset(
    ("id", "created", "system_fingerprint", "timings", "t_start", "n_decoded", "id_slot",
     "created_at", "expires_at", "prompt_progress", "next_token", "id_task")
)  # fmt: skip
# set by each connection, or hop by hop; the gateway declares X-Request-Id on generation
CONNECTION_HEADERS = frozenset(
    ("date", "content-length", "transfer-encoding", "connection", "keep-alive", "x-request-id")
)


@dataclass(frozen=True)
class Ask:
    name: str
    method: str
    path: str
    body: dict[str, Any] | None = None
    compare: Compare = "json"


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes
    content_type: str = field(init=False)

    def __post_init__(self) -> None:
        self.content_type = self.headers.get("content-type", "")


async def ask(session: aiohttp.ClientSession, base: str, request: Ask) -> Answer:
    data = json.dumps(request.body).encode() if request.body is not None else None
    headers = {"Content-Type": "application/json"} if data is not None else {}
    async with session.request(
        request.method, base + request.path, data=data, headers=headers
    ) as r:
        return Answer(r.status, {k.lower(): v for k, v in r.headers.items()}, await r.read())


def _without_volatile(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_volatile(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_without_volatile(item) for item in value]
    return value


def _shape(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shape(value[0])] if value else []
    return type(value).__name__


def _events(body: bytes) -> list[Any]:
    found = []
    for line in body.decode(errors="replace").splitlines():
        if line.startswith("data:"):
            data = line[5:].strip()
            parsed = json_object(data.encode())
            found.append(_without_volatile(parsed) if parsed is not None else data)
    return found


def _series(body: bytes) -> set[str]:
    names = set()
    for line in body.decode(errors="replace").splitlines():
        if line and not line.startswith("#"):
            names.add(line.split("{")[0].split(" ")[0])
    return names


def comparable(answer: Answer, how: Compare) -> Any:
    """What of an answer must be the same direct and through the gateway."""
    headers = sorted(k for k in answer.headers if k not in CONNECTION_HEADERS)
    if how == "stream":
        body: Any = _events(answer.body)
    elif how == "series":
        body = sorted(_series(answer.body))
    elif how in ("json", "shape"):
        parsed = json_object(answer.body)
        if parsed is None:
            body = answer.body
        else:  # a body encoded again has the same fields, and other separators
            body = _shape(parsed) if how == "shape" else _without_volatile(parsed)
            body = {"fields": body, "separators": [answer.body.count(s) for s in (b", ", b": ")]}
    else:
        body = answer.body
    return {
        "status": answer.status,
        "content_type": answer.content_type,
        "headers": headers,
        "body": body,
    }


def differences(direct: Any, through: Any) -> list[str]:
    return [
        f"{key}: direct {direct[key]!r:.600} / through the gateway {through[key]!r:.600}"
        for key in direct
        if direct[key] != through[key]
    ]
