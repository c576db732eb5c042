"""A server's own error, read from a reply body or an SSE event in every shape servers send.

vLLM 0.26.0 sends `{"error": {"message", "type", "param", "code"}}` (`ErrorResponse` of
vllm/entrypoints/openai/engine/protocol.py), in a stream as a `data:` event and otherwise as the
body of an HTTP 4xx/5xx. Older vLLM sent the same fields at the top level with
`"object": "error"`; llama-server and proxies send `{"error": "text"}` or
`{"error": {"code", "message"}}`. vLLM's message can be empty: an `EngineGenerateError` carries
no text, its cause is only in the server's log. No field's type is trusted (a message may be a
number or an object), and where the server gave no text the raw JSON is shown instead.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field

from sparkrig.errors import excerpt

_TEXT_CHARS = 300
_RAW_CHARS = 200


class ServerError(BaseModel):
    """What the server said about an error, each part as text (None when it gave none)."""

    message: str | None = Field(description="the server's own words; None when empty or absent")
    type: str | None = None
    code: str | None = Field(default=None, description="as sent: vLLM puts the HTTP status here")
    param: str | None = None
    raw: str = Field(description="the error's JSON as received, cut, for when there is no text")

    def describe(self, what: str = "an error") -> str:
        """`'message' (type, code 500)`, or, with no message, `the server sent WHAT with no
        message: {raw}` so the reader still sees everything that came."""
        labels = [part for part in (self.type, self._code_label(), self._param_label()) if part]
        if self.message is None:
            return f"the server sent {what} with no message: {self.raw}"
        return repr(self.message) + (f" ({', '.join(labels)})" if labels else "")

    def _code_label(self) -> str | None:
        return None if self.code is None else f"code {self.code}"

    def _param_label(self) -> str | None:
        return None if self.param is None else f"param {self.param}"


def server_error(value: Any, raw: str | None = None) -> ServerError | None:
    """The error `value` (a parsed body or event) reports, or None when it reports none: an
    `error` that is absent, null or false, and no `"object": "error"`. `raw` is the text it was
    parsed from, shown (cut) when the server gave no message."""
    if not isinstance(value, dict):
        return None
    detail = value.get("error")
    if detail is not None and detail is not False:
        shown = excerpt(raw if raw is not None else _json(value), _RAW_CHARS)
        if isinstance(detail, dict):
            return _from_fields(detail, shown)
        return ServerError(message=_text(detail), raw=shown)
    if value.get("object") == "error":
        return _from_fields(value, excerpt(raw if raw is not None else _json(value), _RAW_CHARS))
    return None  # every event of every stream passes here: nothing is built for a clean one


def _from_fields(fields: dict[str, Any], raw: str) -> ServerError:
    return ServerError(
        message=_text(fields.get("message")),
        type=_text(fields.get("type")),
        code=_text(fields.get("code")),
        param=_text(fields.get("param")),
        raw=raw,
    )


def _text(value: Any) -> str | None:
    """A field as one line of text: a string as it is, anything else as its JSON; None for
    null, an empty string or container, and whitespace."""
    if value is None or (isinstance(value, dict | list) and not value):
        return None
    return excerpt(value if isinstance(value, str) else _json(value), _TEXT_CHARS) or None


def _json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):  # not from JSON, or nested past the limit
        return f"(a {type(value).__name__} that does not print as JSON)"
