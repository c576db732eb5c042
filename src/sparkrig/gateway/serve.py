"""`gateway serve`: the proxy core (proxy.Gateway: forwarding, pass-through, SSE splitting) with
the serving features on generation requests: stops scoped to content, one reasoning field, live
guards, workload recording, its own metrics and state under /gateway/, and a drain on SIGTERM.

The transparency contract (docs/gateway.md#what-passes-through-unchanged): every path it does not
own reaches the engine and comes back as the engine sent it, /metrics and /health included (the
engine's series and the engine's health: a load balancer sees the engine die). A reply is never
altered by the guards; it is altered only by the two shaping features, each switchable
(serve_config.ServeConfig), and only on requests they apply to, and delayed only by --stretch
(pacing.py, off by default). A client that leaves cancels its request upstream.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing, asynccontextmanager
from typing import Any

import aiohttp
from aiohttp import web

from sparkrig import defaults
from sparkrig.gateway.config import GatewayConfig
from sparkrig.gateway.jsonl import JsonlLog
from sparkrig.gateway.live_guards import EMPTY_CONTENT, reply_findings
from sparkrig.gateway.pacing import stretched_blocks, wait_until_stretched
from sparkrig.gateway.proxy import (
    Gateway,
    bad_gateway,
    forwarded_headers,
    listen_socket,
    relay_reader,
)
from sparkrig.gateway.reasoning_fields import UPSTREAM_KEYS, ReasoningKeys
from sparkrig.gateway.request_faults import Api, without_stop
from sparkrig.gateway.serve_config import ServeConfig
from sparkrig.gateway.serve_metrics import CONTENT_TYPE, ServeMetrics
from sparkrig.gateway.shaping import ReplyShaper, ShapePlan
from sparkrig.gateway.stops import stop_strings
from sparkrig.gateway.trace import Trace
from sparkrig.gateway.workload import workload_record
from sparkrig.wire.openai import json_object, text_holder
from sparkrig.wire.sse import DONE, ReceivedEvent, is_event_stream, sse_data, sse_events

REQUEST_ID = "X-Request-Id"
OWN_METRICS = "/gateway/metrics"  # beside the engine's /metrics, which passes through
OWN_HEALTH = "/gateway/health"
REASONING_KEY_HEADER = "X-Reasoning-Key"
_KEY_CHOICES: dict[str, ReasoningKeys] = {
    "both": "both",
    "reasoning_content": "reasoning_content",
    "reasoning": "reasoning",
}


def error_event(message: str, kind: str) -> bytes:
    """An in-band error for a stream already under way (its HTTP status is already sent)."""
    return sse_data({"error": {"code": 502, "type": kind, "message": message}})


class ServingGateway(Gateway):
    def __init__(self, upstream_url: str, serve: ServeConfig) -> None:
        super().__init__(upstream_url, GatewayConfig())
        self.serve = serve
        self._generations = 0  # generation requests seen, for --stretch-first
        self.metrics = ServeMetrics()
        self.draining = False
        self.guard_log = JsonlLog(serve.guard_log)
        self.workload_log = JsonlLog(serve.workload_log)

    def app(self) -> web.Application:
        app = web.Application(client_max_size=defaults.GATEWAY_MAX_REQUEST_BYTES)
        app.router.add_get(OWN_HEALTH, self.own_health)
        app.router.add_get(OWN_METRICS, self.metrics_page)
        app.router.add_get("/health", self.health)
        app.router.add_route("*", "/{tail:.*}", self.handle)
        app.on_startup.append(self._open)
        app.on_cleanup.append(self._close)
        return app

    async def own_health(self, _request: web.Request) -> web.Response:
        """The gateway's own state: serving or draining, its upstream, the replies in flight."""
        state = {
            "status": "draining" if self.draining else "ok",
            "upstream": self.upstream_url,
            "in_flight": len(self.ledger.in_flight),
        }
        return web.json_response(state, status=503 if self.draining else 200)

    async def health(self, request: web.Request) -> web.StreamResponse:
        """The engine's /health as the engine answers it (loading, dead, ready), so a load
        balancer behind the gateway sees the engine; 503 while the gateway drains or when the
        engine does not answer at all."""
        if self.draining:
            return web.json_response({"status": "draining"}, status=503)
        try:
            return await self._pass_through(request, await request.read())
        except (aiohttp.ClientError, aiohttp.http_exceptions.HttpProcessingError) as exc:
            message = (
                f"the engine at {self.upstream_url} does not answer ({exc.__class__.__name__}) "
                "— check the server behind the gateway is running"
            )
            return web.json_response(
                {"status": "unreachable", "upstream": self.upstream_url, "message": message},
                status=503,
            )

    async def metrics_page(self, _request: web.Request) -> web.Response:
        return web.Response(body=self.metrics.render(), headers={"Content-Type": CONTENT_TYPE})

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if self.draining:
            message = "the gateway is draining before it stops — send the request again later"
            return web.json_response({"error": {"code": 503, "message": message}}, status=503)
        return await super().handle(request)

    async def _generation(
        self, request: web.Request, api: Api, parsed: dict[str, Any], raw: bytes
    ) -> web.StreamResponse:
        trace = Trace(
            request_id=request.headers.get(REQUEST_ID) or uuid.uuid4().hex,
            api=api,
            body=parsed,
            wall=time.time(),
            start_ns=time.perf_counter_ns(),
        )
        self._generations += 1
        first = self.serve.stretch_first
        if not first or self._generations <= first:
            trace.stretch = self.serve.stretch
        plan = self._plan(request, api, parsed)
        shaper = ReplyShaper(plan)
        data = json.dumps(without_stop(parsed)).encode() if plan.stops else raw
        headers = forwarded_headers(request.headers)
        headers["Accept-Encoding"] = "identity"
        tracked = self.ledger.arrive(0, 1)
        self.metrics.in_flight.inc()
        try:
            async with await self._post_upstream(self._url(request), data, headers) as up:
                trace.status = up.status
                reply_headers = {**forwarded_headers(up.headers), REQUEST_ID: trace.request_id}
                if up.status >= 400:  # the upstream's refusal goes back as it is
                    body = await up.read()
                    trace.error = f"upstream answered {up.status}: {body[:200]!r}"
                    return web.Response(status=up.status, body=body, headers=reply_headers)
                if is_event_stream(up.headers.get("Content-Type")):
                    return await self._stream(request, up, reply_headers, shaper, trace)
                return await self._whole(up, reply_headers, shaper, trace)
        except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError) as exc:
            # unreachable, or gone while its whole (non-streamed) reply was being read
            trace.status, trace.error = 502, f"upstream unreachable ({exc.__class__.__name__})"
            self.metrics.upstream_errors.labels(kind="unreachable").inc()
            response = bad_gateway(self.upstream_url, exc)
            response.headers[REQUEST_ID] = trace.request_id
            return response
        finally:
            self.ledger.depart(tracked)
            self.metrics.in_flight.dec()
            self._account(trace, shaper)

    def _plan(self, request: web.Request, api: Api, body: dict[str, Any]) -> ShapePlan:
        reasoning = api == "chat" and self.serve.is_reasoning_request(body)
        stops = stop_strings(body) if reasoning and self.serve.stops_on_content else []
        keys: ReasoningKeys | None = None
        if self.serve.normalise_reasoning and api == "chat":
            asked = request.headers.get(REASONING_KEY_HEADER, "")
            keys = _KEY_CHOICES.get(asked, self.serve.reasoning_keys)
        if stops:
            self.metrics.stops_held.inc()
        return ShapePlan(api, stops, keys, self.serve.template_opens_think)

    async def _whole(
        self,
        up: aiohttp.ClientResponse,
        headers: dict[str, str],
        shaper: ReplyShaper,
        trace: Trace,
    ) -> web.Response:
        raw = await up.read()
        if trace.stretch:
            await wait_until_stretched(trace.start_ns, time.perf_counter_ns(), trace.stretch)
        parsed = json_object(raw)
        trace.output_sent()
        if parsed is None:
            return web.Response(status=up.status, body=raw, headers=headers)
        shaped = shaper.shape_body(parsed)
        if shaper.unchanged:  # nothing shaped: the engine's bytes, not a second encoding
            return web.Response(status=up.status, body=raw, headers=headers)
        body = json.dumps(shaped, ensure_ascii=False).encode()
        return web.Response(status=up.status, body=body, headers=headers)

    async def _stream(
        self,
        request: web.Request,
        up: aiohttp.ClientResponse,
        headers: dict[str, str],
        shaper: ReplyShaper,
        trace: Trace,
    ) -> web.StreamResponse:
        response = web.StreamResponse(status=up.status, headers=headers)
        await response.prepare(request)
        blocks = (
            stretched_blocks(up.content, trace.start_ns, trace.stretch)
            if trace.stretch
            else up.content.iter_any()
        )
        try:
            async with aclosing(sse_events(blocks, relay_reader())) as events:
                done = False
                async for event in events:
                    if done := await self._event(event, response, shaper, trace):
                        break
            if not done:  # the upstream ended without [DONE]: send what is held, then end
                for chunk in shaper.finish_chunks():
                    await response.write(sse_data(chunk))
            await response.write_eof()
        except (aiohttp.ClientPayloadError, aiohttp.ClientConnectionError) as exc:
            trace.error = f"upstream cut the stream ({exc.__class__.__name__})"
            self.metrics.upstream_errors.labels(kind="cut").inc()
            message = (
                f"the upstream {self.upstream_url} cut the stream mid-reply "
                f"({exc.__class__.__name__}) — check the server behind the gateway"
            )
            await _end_with_error(response, error_event(message, "upstream_cut"))
        except ConnectionResetError:
            trace.error = "the client went away mid-reply"
        finally:
            await _close(blocks)
        return response

    async def _event(
        self, event: ReceivedEvent, response: web.StreamResponse, shaper: ReplyShaper, trace: Trace
    ) -> bool:
        """Send one upstream event, shaped; True once the reply is over."""
        data = event.data_bytes
        if data is None:
            await response.write(event.raw)  # comments and keep-alives pass as they are
            return False
        if event.is_done:
            for chunk in shaper.finish_chunks():
                await response.write(sse_data(chunk))
            await response.write(event.raw)
            return True
        parsed = json_object(data)
        if parsed is None:
            excerpt = data[:120].decode(errors="replace")
            trace.error = f"malformed upstream event: {excerpt!r}"
            self.metrics.upstream_errors.labels(kind="malformed").inc()
            self.guard_log.write(
                {
                    "time": time.time(),
                    "request_id": trace.request_id,
                    "detector": "malformed_sse",
                    "message": trace.error,
                }
            )
            await response.write(
                error_event(
                    f"the upstream {self.upstream_url} sent an event that is not JSON "
                    f"({excerpt!r}) — check the server behind the gateway",
                    "upstream_malformed",
                )
            )
            return True
        if "error" in parsed and not parsed.get("choices"):
            trace.error = f"upstream error event: {json.dumps(parsed['error'])[:200]}"
        shaped = shaper.shape_chunk(parsed)
        if shaped is not None:
            if _carries_output(shaped):
                trace.output_sent()
            # an event the shaping left alone goes out as its bytes came: no second encoding
            await response.write(event.raw if shaper.unchanged else sse_data(shaped))
        if shaper.ended:
            await response.write(DONE)
            return True
        return False

    def _account(self, trace: Trace, shaper: ReplyShaper) -> None:
        """Metrics, live guards and the workload line, after the reply went out."""
        end_ns = time.perf_counter_ns()
        metrics = self.metrics
        metrics.requests.labels(api=trace.api, status=str(trace.status)).inc()
        metrics.request_seconds.labels(api=trace.api).observe((end_ns - trace.start_ns) / 1e9)
        if trace.first_output_ns is not None:
            ttft = (trace.first_output_ns - trace.start_ns) / 1e9
            metrics.ttft_seconds.labels(api=trace.api).observe(ttft)
        if shaper.reply.stopped_here:
            metrics.stops_applied.inc()
        if self.serve.live_guards and trace.status < 400 and trace.error is None:
            server_kwargs = self.serve.server_chat_template_kwargs
            held = bool(shaper.plan.stops)
            for finding in reply_findings(shaper.reply, trace.body, server_kwargs, stops_held=held):
                metrics.detections.labels(detector=finding.detector).inc()
                if finding.detector == EMPTY_CONTENT:  # its message is "cause: what it means"
                    metrics.empty_content.labels(cause=finding.message.split(":")[0]).inc()
                self.guard_log.write(
                    {"time": time.time(), "request_id": trace.request_id, **finding.model_dump()}
                )
        if self.workload_log.enabled:
            record = workload_record(trace, shaper.reply, end_ns, self.serve.record_prompts)
            self.workload_log.write(record.model_dump(mode="json", exclude_none=True))


def _carries_output(chunk: dict[str, Any]) -> bool:
    for choice in chunk.get("choices") or []:
        holder = text_holder(choice) if isinstance(choice, dict) else {}
        if holder.get("tool_calls") or any(
            isinstance(holder.get(k), str) and holder[k]
            for k in ("content", "text", *UPSTREAM_KEYS)
        ):
            return True
    return False


async def _close(blocks: AsyncIterator[bytes]) -> None:
    """The stretch's reader stops with the reply, even one that ended before the upstream's."""
    if isinstance(blocks, AsyncGenerator):
        await blocks.aclose()


async def _end_with_error(response: web.StreamResponse, event: bytes) -> None:
    try:
        await response.write(event)
        await response.write_eof()
    except ConnectionResetError:
        pass


@asynccontextmanager
async def running_serving_gateway(
    upstream_url: str, serve: ServeConfig | None = None
) -> AsyncIterator[tuple[str, ServingGateway]]:
    """Serve; yield (base URL, gateway). On the way out the listener closes first, replies in
    flight get up to `drain_s` to finish, then everything closes."""
    serve = serve or ServeConfig()
    gateway = ServingGateway(upstream_url, serve)
    runner = web.AppRunner(
        gateway.app(),
        handle_signals=False,
        shutdown_timeout=defaults.GATEWAY_SHUTDOWN_GRACE_S,
        handler_cancellation=True,  # a client that leaves cancels its request upstream too
    )
    await runner.setup()
    site: web.SockSite | None = None
    try:
        listener = listen_socket(serve.host, serve.port)
        site = web.SockSite(runner, listener)
        await site.start()
        yield f"http://{serve.host}:{listener.getsockname()[1]}", gateway
    finally:
        await drain(gateway, site, serve.drain_s)
        await runner.cleanup()
        gateway.guard_log.close()
        gateway.workload_log.close()


async def drain(gateway: ServingGateway, site: web.SockSite | None, drain_s: float) -> None:
    """Stop taking requests; wait for the ones in flight, up to `drain_s`."""
    gateway.draining = True
    if site is not None:
        await site.stop()
    deadline = time.monotonic() + drain_s
    while gateway.ledger.in_flight and time.monotonic() < deadline:  # noqa: ASYNC110
        await asyncio.sleep(0.05)


async def upstream_silence(upstream_url: str) -> str | None:
    """Why the engine does not answer its /health at all (nothing listening, no such host), or
    None when it answers anything: a loading engine's 503 is an answer."""
    url = upstream_url.rstrip("/").removesuffix("/v1") + "/health"
    timeout = aiohttp.ClientTimeout(total=defaults.CONNECT_TIMEOUT_S)
    try:
        async with aiohttp.ClientSession(timeout=timeout) as session, session.get(url):
            return None
    except (aiohttp.ClientError, TimeoutError) as exc:
        return str(exc) or exc.__class__.__name__
