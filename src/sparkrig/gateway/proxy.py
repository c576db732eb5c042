"""The gateway: an aiohttp reverse proxy in front of an OpenAI-compatible server.

Every path is forwarded. Generation (`POST /v1/chat/completions`, `POST /v1/completions`) is
tracked in a ServingLedger and rewritten by its ReplyPlan; a stream is relayed event by event,
never buffered whole. With no fault and no reasoning emulation a reply is relayed byte for byte.
"""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator, Callable
from contextlib import aclosing, asynccontextmanager
from typing import Any

import aiohttp
from aiohttp import web

from sparkrig import defaults
from sparkrig.errors import PortInUseError, UsageError
from sparkrig.gateway.config import Fault, GatewayConfig
from sparkrig.gateway.ledger import ServingLedger, TrackedRequest
from sparkrig.gateway.plan import ReplyPlan, plan_arrival
from sparkrig.gateway.request_faults import Api, prompt_chars
from sparkrig.gateway.rewrite import StreamRewriter, rewrite_body
from sparkrig.wire.openai import json_object
from sparkrig.wire.sse import DONE, ReceivedEvent, SseReader, is_event_stream, sse_data, sse_events

GENERATION_PATHS: dict[str, Api] = {
    "/v1/chat/completions": "chat",
    "/v1/completions": "completions",
    # llama.cpp serves the same two APIs without the /v1 prefix too
    "/chat/completions": "chat",
    "/completions": "completions",
}
# hop-by-hop headers, and the ones aiohttp sets itself for the body it sends
_NOT_FORWARDED = frozenset(
    (
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "trailers",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    )
)


class Gateway:
    """The proxy's state: where to forward, what to inject, and the traffic seen so far."""

    def __init__(self, upstream_url: str, config: GatewayConfig) -> None:
        self.upstream_url = upstream_url.rstrip("/").removesuffix("/v1")
        self.config = config
        self.ledger = ServingLedger()
        self._session: aiohttp.ClientSession | None = None

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            raise RuntimeError("the gateway is not running — use running_gateway()")
        return self._session

    def app(self) -> web.Application:
        app = web.Application(client_max_size=defaults.GATEWAY_MAX_REQUEST_BYTES)
        app.router.add_route("*", "/{tail:.*}", self.handle)
        app.on_startup.append(self._open)
        app.on_cleanup.append(self._close)
        return app

    async def _open(self, _app: web.Application) -> None:
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=defaults.CONNECT_TIMEOUT_S)
        # idle upstream connections are dropped before the upstream drops them (llama.cpp: 5 s)
        connector = aiohttp.TCPConnector(
            limit=0, keepalive_timeout=defaults.GATEWAY_UPSTREAM_KEEPALIVE_S
        )
        self._session = aiohttp.ClientSession(
            timeout=timeout, auto_decompress=False, connector=connector
        )

    async def _post_upstream(
        self, url: str, data: bytes, headers: dict[str, str]
    ) -> aiohttp.ClientResponse:
        try:
            return await self.session.post(url, data=data, headers=headers)
        except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError):
            # closed with no reply at all: a kept-alive connection the upstream closed as the
            # request went out (the keep-alive race), seen as a disconnect or, while the body
            # was still being written, as "Can not write request body" (a ClientOSError; 3 of
            # 9 runs of load_accuracy's 132 requests through the gateway here); once more, on a
            # new connection
            return await self.session.post(url, data=data, headers=headers)

    async def _close(self, _app: web.Application) -> None:
        if self._session is not None:
            await self._session.close()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        api = GENERATION_PATHS.get(request.path) if request.method == "POST" else None
        parsed = json_object(body) if api else None
        try:
            if api is None or parsed is None:
                return await self._pass_through(request, body)
            return await self._generation(request, api, parsed, body)
        except aiohttp.ClientConnectionError as exc:
            return bad_gateway(self.upstream_url, exc)
        except (aiohttp.ClientResponseError, aiohttp.ClientPayloadError) as exc:
            return unreadable_reply(self.upstream_url, exc)

    async def _pass_through(self, request: web.Request, body: bytes) -> web.StreamResponse:
        headers = forwarded_headers(request.headers)
        # the body goes back as it came, so it is encoded only as the client itself accepts
        headers["Accept-Encoding"] = request.headers.get("Accept-Encoding", "identity")
        async with self.session.request(
            request.method, self._url(request), data=body, headers=headers
        ) as upstream:
            if is_event_stream(upstream.headers.get("Content-Type")):
                return await _relay_raw(request, upstream)
            return web.Response(
                status=upstream.status,
                body=await upstream.read(),
                headers=forwarded_headers(upstream.headers),
            )

    async def _generation(
        self, request: web.Request, api: Api, parsed: dict[str, Any], raw: bytes
    ) -> web.StreamResponse:
        tracked = self.ledger.arrive(prompt_chars(parsed, api), self.config.long_prompt_chars)
        try:
            arrival = plan_arrival(self.config, self.ledger, tracked, parsed, api)
            if arrival.plan.drop:
                return _dropped(request)
            data = json.dumps(arrival.upstream_body).encode() if arrival.changed else raw
            headers = forwarded_headers(request.headers)
            headers["Accept-Encoding"] = "identity"  # a reply the gateway may have to rewrite
            async with await self._post_upstream(self._url(request), data, headers) as upstream:
                if upstream.status >= 400:
                    return web.Response(
                        status=upstream.status,
                        body=await upstream.read(),
                        headers=forwarded_headers(upstream.headers),
                    )
                if is_event_stream(upstream.headers.get("Content-Type")):
                    return await self._relay_stream(request, upstream, arrival.plan, tracked)
                return await self._relay_body(upstream, arrival.plan, tracked)
        finally:
            self.ledger.depart(tracked)

    async def _relay_body(
        self, upstream: aiohttp.ClientResponse, plan: ReplyPlan, tracked: TrackedRequest
    ) -> web.Response:
        raw = await upstream.read()
        headers = forwarded_headers(upstream.headers)
        parsed = json_object(raw)
        if parsed is None or (plan.is_identity and not self._tracks_content):
            return web.Response(status=upstream.status, body=raw, headers=headers)
        rewritten = rewrite_body(plan, tracked, parsed)
        body = raw if plan.is_identity else json.dumps(rewritten, ensure_ascii=False).encode()
        return web.Response(status=upstream.status, body=body, headers=headers)

    async def _relay_stream(
        self,
        request: web.Request,
        upstream: aiohttp.ClientResponse,
        plan: ReplyPlan,
        tracked: TrackedRequest,
    ) -> web.StreamResponse:
        if plan.is_identity and not self._tracks_content:
            return await _relay_raw(request, upstream, on_done=lambda: self.ledger.depart(tracked))
        response = web.StreamResponse(
            status=upstream.status, headers=forwarded_headers(upstream.headers)
        )
        await response.prepare(request)
        try:
            await _relay_events(
                upstream,
                response,
                StreamRewriter(plan, tracked),
                on_done=lambda: self.ledger.depart(tracked),
            )
            await response.write_eof()
        except ConnectionResetError:
            pass  # the client went away; leaving `async with` closes the upstream request too
        return response

    @property
    def _tracks_content(self) -> bool:
        """Cross-talk needs every reply's content, the untouched ones' too (they are donors)."""
        return self.config.has(Fault.CROSS_TALK)

    def _url(self, request: web.Request) -> str:
        return self.upstream_url + request.rel_url.raw_path_qs


async def _relay_raw(
    request: web.Request,
    upstream: aiohttp.ClientResponse,
    on_done: Callable[[], None] = lambda: None,
) -> web.StreamResponse:
    """A stream relayed block by block as it arrives, untouched; `on_done` runs before the block
    that ends it ([DONE]) is sent."""
    response = web.StreamResponse(
        status=upstream.status, headers=forwarded_headers(upstream.headers)
    )
    await response.prepare(request)
    try:
        async for block in upstream.content.iter_any():
            if block.rstrip().endswith(b"[DONE]"):
                on_done()
            await response.write(block)
        await response.write_eof()
    except ConnectionResetError:
        pass  # the client went away; leaving `async with` closes the upstream request too
    return response


async def _relay_events(
    upstream: aiohttp.ClientResponse,
    response: web.StreamResponse,
    rewriter: StreamRewriter,
    on_done: Callable[[], None] = lambda: None,
) -> None:
    """Relay every event rewritten; `on_done` runs before the reply's last event is sent."""
    async with aclosing(sse_events(upstream.content.iter_any(), relay_reader())) as events:
        async for event in events:
            if await _relay_event(event, response, rewriter, on_done):
                return
    for chunk in rewriter.finish():
        await response.write(sse_data(chunk))
    on_done()


def relay_reader() -> SseReader:
    """The gateway relays what its upstream sends and leaves the judging of a stream's size to
    the client behind it: no line or event limit of its own."""
    return SseReader(max_line_bytes=None, max_event_lines=None)


async def _relay_event(
    event: ReceivedEvent,
    response: web.StreamResponse,
    rewriter: StreamRewriter,
    on_done: Callable[[], None],
) -> bool:
    """Send one upstream event's rewrite; True once the reply is over (sent [DONE])."""
    if event.data_bytes is None:
        await response.write(event.raw)  # comments and keep-alives pass as they are
        return False
    if event.is_done:
        for chunk in rewriter.finish():
            await response.write(sse_data(chunk))
        on_done()
        await response.write(event.raw)
        return True
    parsed = json_object(event.data_bytes)
    if parsed is None:
        await response.write(event.raw)
        return False
    rewritten = rewriter.rewrite(parsed)
    if rewritten is None:
        await response.write(event.raw)
    for out in rewritten or []:
        await response.write(sse_data(out))
    if rewriter.ended:  # the gateway ended the reply: stop reading upstream
        for out in rewriter.finish():
            await response.write(sse_data(out))
        on_done()
        await response.write(DONE)
        return True
    return False


def forwarded_headers(headers: Any) -> dict[str, str]:
    return {key: value for key, value in headers.items() if key.lower() not in _NOT_FORWARDED}


def _dropped(request: web.Request) -> web.Response:
    """drop-requests: close the client's connection with no reply, as a crashed worker would;
    the response returned is never written."""
    if request.transport is not None:
        request.transport.close()
    return web.Response(status=503)


def bad_gateway(upstream_url: str, exc: Exception) -> web.Response:
    message = (
        f"the gateway cannot reach its upstream {upstream_url} ({exc.__class__.__name__}) — "
        "check the server behind the gateway is running"
    )
    return web.json_response({"error": {"code": 502, "message": message}}, status=502)


def unreadable_reply(upstream_url: str, exc: Exception) -> web.Response:
    """The upstream answered, but not in HTTP the gateway can read (a 204 that carries a chunked
    body, a cut body): the documented 502, never aiohttp's text 500 and a traceback."""
    detail = str(getattr(exc, "message", "") or exc).strip().splitlines()
    message = (
        f"the gateway could not read its upstream's reply from {upstream_url} "
        f"({exc.__class__.__name__}: {(detail or ['no detail'])[0][:120]}) — the server behind "
        "the gateway sent a malformed HTTP response; ask it directly to see it"
    )
    return web.json_response({"error": {"code": 502, "message": message}}, status=502)


def listen_socket(host: str, port: int) -> socket.socket:
    listener = socket.socket()
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((host, port))
    except socket.gaierror as exc:
        listener.close()
        raise UsageError(
            f"the gateway cannot listen on {host}: the address does not resolve "
            f"({exc.strerror}) — pass an address of this machine with --host, e.g. 127.0.0.1"
        ) from exc
    except OSError as exc:
        listener.close()
        raise PortInUseError(
            f"the gateway cannot listen on {host}:{port} ({exc.strerror}) — pick another --port"
        ) from exc
    return listener


@asynccontextmanager
async def running_gateway(
    upstream_url: str,
    config: GatewayConfig | None = None,
    *,
    host: str = defaults.LOCAL_HOST,
    port: int = 0,
) -> AsyncIterator[str]:
    """Serve a gateway in front of `upstream_url` and yield its base URL (port 0: a free one).
    The server and its upstream session are always closed on the way out."""
    gateway = Gateway(upstream_url, config or GatewayConfig())
    runner = web.AppRunner(
        gateway.app(), handle_signals=False, shutdown_timeout=defaults.GATEWAY_SHUTDOWN_GRACE_S
    )
    await runner.setup()
    try:
        listener = listen_socket(host, port)
        await web.SockSite(runner, listener).start()
        yield f"http://{host}:{listener.getsockname()[1]}"
    finally:
        await runner.cleanup()
