"""Async client for any OpenAI-compatible server (llama.cpp, vLLM, SGLang).

Every request returns a RequestRecord; failures are recorded on it, never raised, so one bad
reply cannot end a run of many requests.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any, Literal

import aiohttp
from pydantic import BaseModel, Field

from sparkrig import defaults
from sparkrig.client.accumulate import StreamAccumulator
from sparkrig.client.http_failures import checked_base_url, describe_client_error, web_page_title
from sparkrig.client.records import ErrorKind, RequestError, RequestRecord
from sparkrig.client.timeouts import Timeouts
from sparkrig.errors import UsageError, excerpt
from sparkrig.wire.openai import MalformedField, json_object
from sparkrig.wire.server_error import ServerError, server_error
from sparkrig.wire.sse import ReceivedEvent, SseFault, SseReader, is_event_stream

_BODY_EXCERPT = 500
_ERROR_BODY_BYTES = 64 * 1024
_MAX_BODY_BYTES = 256 * 1024 * 1024  # one non-streamed reply
# A reply of at most N tokens comes in about N events (fewer under speculative decoding); a few
# more carry the role, usage and finish. Past this many a server ignores max_tokens.
_EVENTS_PER_TOKEN, _EXTRA_EVENTS = 4, 64
_RECV_BYTES = 64 * 1024
# vLLM wraps a failure inside its engine in an EngineGenerateError, which has no text
_NO_TEXT_HINT = (
    "the cause is only in the server's log (vLLM sends no text for an EngineGenerateError); read it"
)


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


def api_key_from_env(env_var: str | None = None) -> str | None:
    """The API key by one rule for every command that talks to a server: the variable named
    (`--api-key-env`, or a cluster file's `engine.api_key_env`) and only it; else
    SPARKRIG_API_KEY; else VLLM_API_KEY, the variable vLLM itself reads and a cluster file's
    default. Never printed, never recorded."""
    if env_var:
        return os.environ.get(env_var) or None
    for name in (defaults.API_KEY_ENV, defaults.VLLM_API_KEY_ENV):
        if value := os.environ.get(name):
            return value
    return None


class EndpointClient:
    """One HTTP session to one server. Use as `async with EndpointClient(url) as client:`."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout_s: float = defaults.REQUEST_TIMEOUT_S,
        first_byte_timeout_s: float | None = None,
        idle_timeout_s: float | None = None,
        connect_timeout_s: float | None = None,
        per_event_counts: bool = True,
    ) -> None:
        """Timeouts left at None come from their environment variable, else sparkrig.defaults."""
        self.base_url = checked_base_url(base_url)
        if api_key is not None and any(ord(c) < 32 or ord(c) == 127 for c in api_key):
            raise UsageError(
                "the API key holds a line break or another control character (a header cannot "
                "carry it) — set the variable to the key alone, e.g. without a trailing newline"
            )
        self._api_key = api_key  # kept off every record, log and repr
        self.timeouts = Timeouts.from_env(
            request_s=timeout_s,
            connect_s=connect_timeout_s,
            first_byte_s=first_byte_timeout_s,
            idle_s=idle_timeout_s,
        )
        self._timeout = self.timeouts.for_metadata()
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
            return await response.text(errors="replace")  # bytes that are not text stay visible

    async def send(self, request: ChatRequest | CompletionRequest) -> RequestRecord:  # noqa: PLR0911
        path = "/v1/chat/completions" if request.api == "chat" else "/v1/completions"
        url = f"{self.base_url}{path}"
        body = request_body(request, per_event_counts=self.per_event_counts)
        record = RequestRecord(
            url=url,
            api=request.api,
            stream=request.stream,
            model=request.model,
            send_ns=time.perf_counter_ns(),
        )
        accumulator = StreamAccumulator(record)
        loop = asyncio.get_running_loop()
        deadline = asyncio.timeout(self.timeouts.first_byte_s)

        def received() -> None:  # each block of a stream restarts the idle timeout
            deadline.reschedule(loop.time() + self.timeouts.idle_s)

        try:
            async with (
                deadline,
                self.session.post(
                    url, json=body, headers=request.headers, timeout=self.timeouts.for_requests()
                ) as response,
            ):
                record.response_ns = time.perf_counter_ns()
                _read_in_small_buffers(response)
                if response.status >= 400:
                    return _fail(accumulator, "http_status", await _http_error(response))
                if is_event_stream(response.headers.get("Content-Type")):
                    most = request.max_tokens and request.max_tokens * _EVENTS_PER_TOKEN
                    await _read_stream(response, accumulator, received, most)
                else:
                    await _read_body(response, accumulator)
        except aiohttp.ClientConnectorError as exc:
            return _fail(
                accumulator,
                "connect",
                RequestError(kind="connect", message=describe_client_error(exc, url)),
            )
        except TimeoutError as exc:
            message = self.timeouts.message(
                url,
                exc,
                ours=deadline.expired(),
                events=accumulator.event_count,
                first_byte_seen=record.first_byte_ns is not None,
            )
            return _fail(accumulator, "timeout", RequestError(kind="timeout", message=message))
        except (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError) as exc:
            return _fail(
                accumulator,
                "stream_cut",
                RequestError(
                    kind="stream_cut",
                    message=(
                        f"the connection closed mid-reply ({exc.__class__.__name__}) — check the "
                        "server log for a crash or restart"
                    ),
                ),
            )
        except _ProtocolFault as fault:
            return _fail(accumulator, fault.error.kind, fault.error)
        except aiohttp.ClientError as exc:
            return _fail(
                accumulator,
                "protocol",
                RequestError(kind="protocol", message=describe_client_error(exc, url)),
            )
        return accumulator.finish(time.perf_counter_ns())


async def read_at_most(response: aiohttp.ClientResponse, limit: int) -> bytes:
    """The body up to its end or `limit` bytes, whichever comes first: a server cannot make
    sparkrig hold an endless body (aiohttp's `read(n)` returns what has arrived, not n)."""
    parts: list[bytes] = []
    size = 0
    while size < limit and (block := await response.content.read(limit - size)):
        parts.append(block)
        size += len(block)
    return b"".join(parts)


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


async def _http_error(response: aiohttp.ClientResponse) -> RequestError:
    raw = await read_at_most(response, _ERROR_BODY_BYTES)  # a 3 MB error page stays unread
    text = raw.decode(errors="replace")
    title = web_page_title(raw)
    error = None if title else server_error(json_object(raw), text)
    hint = _http_error_hint(response.status, error)
    if title:
        said = f"a web page titled {title!r}"
    elif error is not None:
        said = error.describe("an error body")
    else:
        said = repr(excerpt(text))
    return RequestError(
        kind="http_status",
        status=response.status,
        body=text[:_BODY_EXCERPT],
        message=f"HTTP {response.status} from {response.url}: {said} — {hint}",
        server=error,
    )


def _http_error_hint(status: int, error: ServerError | None) -> str:
    # vLLM answers 404 for a model it does not serve, at the right URL (its `param` is "model")
    if error is not None and error.param == "model":
        return "check the model name against the server's /v1/models, or pass --model"
    return {
        401: "set the API key (--api-key-env, default $SPARKRIG_API_KEY)",
        404: "check the URL and that the server speaks the OpenAI API at /v1",
    }.get(status) or (
        _NO_TEXT_HINT
        if error is not None and error.message is None
        else "read the server's message and its log"
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
    except RecursionError as exc:
        raise _ProtocolFault(
            RequestError(
                kind="non_json",
                body=text[:_BODY_EXCERPT],
                message=f"{where} is JSON nested too deeply to read — check the URL points at an "
                "OpenAI-compatible server",
            )
        ) from exc
    except json.JSONDecodeError as exc:
        raise _ProtocolFault(
            RequestError(
                kind="non_json",
                body=text[:_BODY_EXCERPT],
                message=f"{where} is not JSON ({exc.msg}): {excerpt(text, 80)!r} — check the URL "
                "points at an OpenAI-compatible server, not a web page or proxy",
            )
        ) from exc


async def _read_body(response: aiohttp.ClientResponse, accumulator: StreamAccumulator) -> None:
    raw = await read_at_most(response, _MAX_BODY_BYTES + 1)
    if len(raw) > _MAX_BODY_BYTES:
        message = (
            f"the reply body ran past {_MAX_BODY_BYTES} bytes — a chat reply is far smaller; "
            "check the URL points at an OpenAI-compatible server"
        )
        raise _ProtocolFault(RequestError(kind="protocol", message=message))
    t_ns = time.perf_counter_ns()
    accumulator.record.first_byte_ns = t_ns
    if (title := web_page_title(raw)) is not None:
        raise _ProtocolFault(
            RequestError(
                kind="non_json",
                body=raw[:_BODY_EXCERPT].decode(errors="replace"),
                message=(
                    f"the reply is a web page titled {title!r}, not JSON — point the URL at the "
                    "OpenAI-compatible server itself, not a web UI, login page or proxy"
                ),
            )
        )
    body = _parse_json(raw.decode(errors="replace"), "the reply body")
    if not isinstance(body, dict):
        raise _ProtocolFault(
            RequestError(
                kind="protocol",
                body=raw[:_BODY_EXCERPT].decode(errors="replace"),
                message="the reply is JSON but not an object — is this an OpenAI-compatible "
                "server?",
            )
        )
    try:
        accumulator.add_body(t_ns, body)
    except MalformedField as exc:
        raise _malformed("the reply body", exc, raw.decode(errors="replace")) from exc


async def _read_stream(
    response: aiohttp.ClientResponse,
    accumulator: StreamAccumulator,
    received: Callable[[], None] = lambda: None,
    max_tokens_events: int | None = None,
) -> None:
    """Read SSE through the wire layer's reader; `[DONE]` ends it. Each event carries the time
    the block completing it arrived."""
    record = accumulator.record
    most = None if max_tokens_events is None else max_tokens_events + _EXTRA_EVENTS
    reader = SseReader()
    try:
        while block := await response.content.readany():
            received()
            t_ns = time.perf_counter_ns()
            if record.first_byte_ns is None:
                record.first_byte_ns = t_ns
            for event in reader.feed(block, t_ns):
                if _take_event(event, accumulator, most):
                    return
        last = reader.finish()
    except SseFault as fault:
        raise _ProtocolFault(
            RequestError(kind="protocol", body=fault.excerpt or None, message=fault.message)
        ) from fault
    if last is not None and _take_event(last, accumulator, most):
        return
    if record.finish_reason is None:
        raise _ProtocolFault(
            RequestError(
                kind="stream_cut",
                message=f"the event stream ended after {accumulator.event_count} events with no "
                "finish_reason and no [DONE] — the server or a proxy cut the reply; "
                "check its log",
            )
        )


def _take_event(event: ReceivedEvent, accumulator: StreamAccumulator, most: int | None) -> bool:
    """Add one event's chunk; True at `[DONE]`. Events without data (comments, `event:` or `id:`
    alone, stray blank lines) are skipped."""
    if event.data is None:
        return False
    if event.is_done:
        return True
    _add_event(accumulator, event.received_ns, event.data)
    if most is not None and accumulator.event_count > most:
        raise _ProtocolFault(
            RequestError(
                kind="protocol",
                message=(
                    f"the server sent more than {most} events for a reply of at most "
                    f"{most // _EVENTS_PER_TOKEN} tokens — it ignores max_tokens; check the "
                    "server (or a proxy replaying the stream)"
                ),
            )
        )
    return False


def _add_event(accumulator: StreamAccumulator, t_ns: int, data: str) -> None:
    chunk = _parse_json(data, "an SSE event")
    if not isinstance(chunk, dict):
        raise _ProtocolFault(
            RequestError(
                kind="protocol",
                body=data[:_BODY_EXCERPT],
                message="an SSE event is JSON but not an object — is this an OpenAI-compatible "
                "server?",
            )
        )
    if (error := server_error(chunk, data)) is not None:
        said = error.describe("an error event mid-stream")
        raise _ProtocolFault(
            RequestError(
                kind="protocol",
                body=data[:_BODY_EXCERPT],
                message=_mid_stream(error, said),
                server=error,
            )
        )
    try:
        accumulator.add_chunk(t_ns, chunk)
    except MalformedField as exc:
        raise _malformed(f"SSE event {accumulator.event_count + 1}", exc, data) from exc


def _mid_stream(error: ServerError, said: str) -> str:
    if error.message is None:
        return f"{said} — {_NO_TEXT_HINT}"
    return f"the server reported an error mid-stream: {said} — read its log"


def _malformed(where: str, exc: MalformedField, data: str) -> _ProtocolFault:
    return _ProtocolFault(
        RequestError(
            kind="malformed",
            body=data[:_BODY_EXCERPT],
            message=f"{where}: {exc.describe()} — the server (or a proxy) sent a malformed reply; "
            "check its version and the OpenAI API it claims",
        )
    )
