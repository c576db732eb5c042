"""Async client for any OpenAI-compatible server (llama.cpp, vLLM, SGLang).

Every request returns a RequestRecord; failures are recorded on it, never raised, so one bad
reply cannot end a run of many requests.
"""

from __future__ import annotations

import json
import os
import time
from types import TracebackType
from typing import Any, Literal

import aiohttp
from pydantic import BaseModel, Field

from sparkrig import defaults
from sparkrig.client.accumulate import StreamAccumulator
from sparkrig.client.records import ErrorKind, RequestError, RequestRecord

_BODY_EXCERPT = 500
_MAX_LINE_BYTES = 16 * 1024 * 1024  # one SSE line; bounds memory against a server gone wrong
_RECV_BYTES = 64 * 1024


class _RequestBase(BaseModel):
    model: str
    max_tokens: int | None = 256
    temperature: float | None = 0.0
    stream: bool = True
    logprobs: int | None = Field(default=None, description="top-k alternatives per token")
    extra: dict[str, Any] = Field(
        default_factory=dict, description="engine-specific fields sent as they are"
    )
    headers: dict[str, str] = Field(
        default_factory=dict, description="extra HTTP headers, e.g. X-Request-Id for a gateway"
    )


class ChatRequest(_RequestBase):
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None = None

    api: Literal["chat"] = "chat"


class CompletionRequest(_RequestBase):
    prompt: str | list[int] = Field(description="text, or token ids for an exact prompt length")

    api: Literal["completions"] = "completions"


def request_body(
    request: ChatRequest | CompletionRequest, *, per_event_counts: bool
) -> dict[str, Any]:
    """The JSON body. `per_event_counts` asks the server for cumulative token counts on every
    chunk (vLLM: continuous_usage_stats; llama.cpp: timings_per_token); servers ignore what they
    do not know, and a strict one can be spoken to with per_event_counts off."""
    body: dict[str, Any] = {"model": request.model, "stream": request.stream}
    if isinstance(request, ChatRequest):
        body["messages"] = request.messages
        if request.tools:
            body["tools"] = request.tools
    else:
        body["prompt"] = request.prompt
    if request.max_tokens is not None:
        body["max_tokens"] = request.max_tokens
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if request.logprobs is not None:
        if isinstance(request, ChatRequest):
            body["logprobs"] = True
            body["top_logprobs"] = request.logprobs
        else:
            body["logprobs"] = request.logprobs
    if request.stream:
        options: dict[str, Any] = {"include_usage": True}
        if per_event_counts:
            options["continuous_usage_stats"] = True
            body["timings_per_token"] = True
        body["stream_options"] = options
    body.update(request.extra)
    return body


def api_key_from_env(env_var: str = defaults.API_KEY_ENV) -> str | None:
    return os.environ.get(env_var) or None


class EndpointClient:
    """One HTTP session to one server. Use as `async with EndpointClient(url) as client:`."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout_s: float = defaults.REQUEST_TIMEOUT_S,
        per_event_counts: bool = True,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        if self.base_url.endswith("/v1"):
            self.base_url = self.base_url[: -len("/v1")]
        self._api_key = api_key  # kept off every record, log and repr
        self._timeout = aiohttp.ClientTimeout(
            total=timeout_s, sock_connect=defaults.CONNECT_TIMEOUT_S
        )
        self.per_event_counts = per_event_counts
        self._session: aiohttp.ClientSession | None = None

    def __repr__(self) -> str:
        return f"EndpointClient({self.base_url!r})"

    async def __aenter__(self) -> EndpointClient:
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        # one fresh connection per request: llama-server may close a kept-alive connection
        # between requests, and every request is then timed the same way (connect included)
        connector = aiohttp.TCPConnector(limit=0, force_close=True)
        self._session = aiohttp.ClientSession(
            headers=headers, timeout=self._timeout, connector=connector
        )
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._session is not None:
            await self._session.close()

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            raise RuntimeError("use EndpointClient inside `async with`")
        return self._session

    async def get_json(self, path: str) -> Any:
        async with self.session.get(f"{self.base_url}{path}") as response:
            response.raise_for_status()
            return await response.json(content_type=None)

    async def get_text(self, path: str) -> str:
        async with self.session.get(f"{self.base_url}{path}") as response:
            response.raise_for_status()
            return await response.text()

    async def send(self, request: ChatRequest | CompletionRequest) -> RequestRecord:  # noqa: PLR0911
        path = "/v1/chat/completions" if request.api == "chat" else "/v1/completions"
        url = f"{self.base_url}{path}"
        body = request_body(request, per_event_counts=self.per_event_counts)
        record = RequestRecord(
            url=url, api=request.api, stream=request.stream, model=request.model,
            send_ns=time.perf_counter_ns(),
        )  # fmt: skip
        accumulator = StreamAccumulator(record)
        try:
            async with self.session.post(url, json=body, headers=request.headers) as response:
                record.response_ns = time.perf_counter_ns()
                _read_in_small_buffers(response)
                if response.status >= 400:
                    return _fail(accumulator, "http_status", await _http_error(response))
                if "text/event-stream" in response.headers.get("Content-Type", ""):
                    await _read_stream(response, accumulator)
                else:
                    await _read_body(response, accumulator)
        except aiohttp.ClientConnectorError as exc:
            return _fail(accumulator, "connect", _connect_message(url, exc))
        except TimeoutError:
            return _fail(accumulator, "timeout", RequestError(kind="timeout", message=(
                f"no complete reply from {url} within {self._timeout.total:g}s — raise the "
                "timeout or check the server is not stuck")))  # fmt: skip
        except (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError) as exc:
            return _fail(accumulator, "stream_cut", RequestError(kind="stream_cut", message=(
                f"the connection closed mid-reply ({exc.__class__.__name__}) — check the "
                "server log for a crash or restart")))  # fmt: skip
        except _ProtocolFault as fault:
            return _fail(accumulator, fault.error.kind, fault.error)
        except aiohttp.ClientError as exc:
            return _fail(accumulator, "protocol", RequestError(kind="protocol", message=(
                f"{exc.__class__.__name__}: {exc} — check the URL points at an "
                "OpenAI-compatible server")))  # fmt: skip
        return accumulator.finish(time.perf_counter_ns())


def _read_in_small_buffers(response: aiohttp.ClientResponse) -> None:
    """asyncio reads a socket into a new 256 KiB bytes object each time, which glibc maps and
    unmaps: 12 µs of system time per read, measured, and a streaming server costs a read per
    event. 64 KiB comes from the heap (2 µs). Only asyncio's own selector transport has this
    `max_size`; any other transport is left as it is."""
    transport = response.connection.transport if response.connection is not None else None
    size = getattr(transport, "max_size", None)
    if isinstance(size, int) and size > _RECV_BYTES:
        transport.max_size = _RECV_BYTES  # type: ignore[union-attr]


class _ProtocolFault(Exception):
    def __init__(self, error: RequestError) -> None:
        super().__init__(error.message)
        self.error = error


def _fail(accumulator: StreamAccumulator, kind: ErrorKind, error: RequestError) -> RequestRecord:
    end_ns = time.perf_counter_ns()
    record = accumulator.settle()  # the events that did arrive stay on the record
    record.end_ns = end_ns
    error.kind = kind
    record.error = error
    return record


def _connect_message(url: str, exc: aiohttp.ClientConnectorError) -> RequestError:
    reason = exc.os_error.strerror if exc.os_error and exc.os_error.strerror else str(exc)
    return RequestError(
        kind="connect",
        message=f"cannot connect to {url} ({reason}) — check the server is running and the "
        "host and port are right (`sparkrig status` lists local instances)",
    )


async def _http_error(response: aiohttp.ClientResponse) -> RequestError:
    text = (await response.text(errors="replace"))[:_BODY_EXCERPT]
    hint = {
        401: "set the API key (--api-key-env, default $SPARKRIG_API_KEY)",
        404: "check the URL and that the server speaks the OpenAI API at /v1",
    }.get(response.status, "read the server's message and its log")
    return RequestError(
        kind="http_status",
        status=response.status,
        body=text,
        message=f"HTTP {response.status} from {response.url}: {text[:120]!r} — {hint}",
    )


_json_decoder = json.JSONDecoder()


def _parse_json(text: str, where: str) -> Any:
    try:  # the common case, a value filling the text, without json.loads's whitespace passes
        value, end = _json_decoder.raw_decode(text)
        if end == len(text):
            return value
    except (ValueError, RecursionError):
        pass
    try:  # anything else is json.loads's to accept (surrounding whitespace) or reject
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise _ProtocolFault(RequestError(
            kind="non_json", body=text[:_BODY_EXCERPT],
            message=f"{where} is not JSON ({exc.msg}): {text[:80]!r} — check the URL points at "
            "an OpenAI-compatible server, not a web page or proxy")) from exc  # fmt: skip


async def _read_body(response: aiohttp.ClientResponse, accumulator: StreamAccumulator) -> None:
    raw = await response.read()
    t_ns = time.perf_counter_ns()
    accumulator.record.first_byte_ns = t_ns
    body = _parse_json(raw.decode(errors="replace"), "the reply body")
    if not isinstance(body, dict):
        raise _ProtocolFault(RequestError(
            kind="protocol", body=raw[:_BODY_EXCERPT].decode(errors="replace"),
            message="the reply is JSON but not an object — is this an OpenAI-compatible "
            "server?"))  # fmt: skip
    accumulator.add_body(t_ns, body)


async def _read_stream(response: aiohttp.ClientResponse, accumulator: StreamAccumulator) -> None:
    """Read SSE: `data:` lines joined until a blank line make one event; `[DONE]` ends it.

    Lines are split here from whatever bytes have arrived: aiohttp's readline cost more than the
    rest of an event's handling at hundreds of streams. An event is still stamped when its blank
    line is handled, as a line-by-line reader would stamp it.
    """
    record = accumulator.record
    data_lines: list[bytes] = []
    done = False
    pending = b""
    while not done and (block := await response.content.readany()):
        if record.first_byte_ns is None:
            record.first_byte_ns = time.perf_counter_ns()
        lines = (pending + block if pending else block).split(b"\n")
        pending = lines.pop()  # an unfinished line waits for the next block
        if len(pending) > _MAX_LINE_BYTES:
            raise _ProtocolFault(RequestError(kind="protocol", body=pending[:_BODY_EXCERPT].decode(
                errors="replace"), message=f"an SSE line ran past {_MAX_LINE_BYTES} bytes with no "
                "newline — is this an event stream? check the server or proxy"))  # fmt: skip
        for raw_line in lines:
            if _take_line(raw_line, data_lines):
                data = b"\n".join(data_lines).decode(errors="replace")
                data_lines.clear()
                if data.strip() == "[DONE]":
                    done = True
                    break
                _add_event(accumulator, time.perf_counter_ns(), data)
    if pending and not done:
        _take_line(pending, data_lines)  # a last line with no newline; its event is read below
    if data_lines and not done:  # a final event without its blank line
        data = b"\n".join(data_lines).decode(errors="replace")
        done = data.strip() == "[DONE]"
        if not done:
            _add_event(accumulator, time.perf_counter_ns(), data)
    if not done and record.finish_reason is None:
        raise _ProtocolFault(RequestError(
            kind="stream_cut",
            message=f"the event stream ended after {accumulator.event_count} events with no "
            "finish_reason and no [DONE] — the server or a proxy cut the reply; "
            "check its log"))  # fmt: skip


def _take_line(raw_line: bytes, data_lines: list[bytes]) -> bool:
    """Keep a `data:` line's value; True for a blank line that ends an event with data."""
    line = raw_line.rstrip(b"\r\n")
    if line.startswith(b"data:"):
        data_lines.append(line[5:].lstrip(b" "))
        return False
    return not line and bool(data_lines)  # comments (":"), event:/id: and stray blank lines


def _add_event(accumulator: StreamAccumulator, t_ns: int, data: str) -> None:
    chunk = _parse_json(data, "an SSE event")
    if not isinstance(chunk, dict):
        raise _ProtocolFault(RequestError(kind="protocol", body=data[:_BODY_EXCERPT],
            message="an SSE event is JSON but not an object — is this an OpenAI-compatible "
            "server?"))  # fmt: skip
    if isinstance(chunk.get("error"), (dict, str)):
        detail = chunk["error"]
        text = detail.get("message", str(detail)) if isinstance(detail, dict) else detail
        raise _ProtocolFault(RequestError(kind="protocol", body=data[:_BODY_EXCERPT],
            message=f"the server reported an error mid-stream: {text} — read its log"))  # fmt: skip
    accumulator.add_chunk(t_ns, chunk)
