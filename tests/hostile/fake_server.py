"""A misbehaving OpenAI-compatible server from the standard library, one scenario per path.

`http://127.0.0.1:PORT/<scenario>` is the base URL of one scenario: its /v1/models, /metrics and
/v1/chat/completions answer as that scenario says. It runs in a thread, so the CLI under test can
run its own event loop in the test's thread. The replies are written by hand after the shapes
llama-server sends (see tests/client/test_accumulate.py), each with one thing wrong.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODELS = {"object": "list", "data": [{"id": "m", "object": "model"}]}
LOGIN_PAGE = "<!DOCTYPE html><html><head><title>Sign in</title></head><body>log in</body></html>"

Chunk = dict[str, Any]


def delta(fields: dict[str, Any], finish: str | None = None) -> Chunk:
    return {"choices": [{"index": 0, "delta": fields, "finish_reason": finish}]}


def good(text: str = "Hello") -> list[Chunk]:
    return [delta({"content": text}), delta({}, "stop")]


def logprob_item(**fields: Any) -> Chunk:
    item = {"token": "Hi", "logprob": -0.1, "top_logprobs": [{"token": "Hi", "logprob": -0.1}]}
    item.update(fields)
    return {"choices": [{"index": 0, "delta": {"content": "Hi"}, "logprobs": {"content": [item]}}]}


def tool_call(**fields: Any) -> Chunk:
    call = {"index": 0, "id": "c1", "function": {"name": "f", "arguments": "{}"}}
    call.update(fields)
    return delta({"tool_calls": [call]})


# /metrics texts whose numbers are hostile: (text, what the one line must say).
_COUNTER = (
    '# TYPE vllm:generation_tokens counter\nvllm:generation_tokens_total{{model_name="m"}} {}\n'
)
HOSTILE_METRICS: dict[str, tuple[str, str]] = {
    "counter-nan": (_COUNTER.format("NaN"), "vllm:generation_tokens_total is nan"),
    "counter-inf": (_COUNTER.format("+Inf"), "vllm:generation_tokens_total is inf"),
    "counter-1e400": (_COUNTER.format("1e400"), "vllm:generation_tokens_total is inf"),
    "counter-negative": (_COUNTER.format("-5"), "of 0 or more"),
    "counter-arabic-digits": (_COUNTER.format("\u0663"), "not Prometheus"),
}


# One malformed chunk each, sent after a good first event so the event number is 2.
MALFORMED: dict[str, tuple[Chunk, str]] = {
    "choices-number": ({"choices": 5}, "choices"),
    "choices-string": ({"choices": "none"}, "choices"),
    "choices-object": ({"choices": {"0": {}}}, "choices"),
    "choice-number": ({"choices": [5]}, "choices[0]"),
    "choice-string": ({"choices": ["hi"]}, "choices[0]"),
    "delta-string": ({"choices": [{"delta": "hello"}]}, "choices[0].delta"),
    "delta-list": ({"choices": [{"delta": ["hello"]}]}, "choices[0].delta"),
    "message-string": ({"choices": [{"message": "hello"}]}, "choices[0].message"),
    "content-number": (delta({"content": 5}), "choices[0].delta.content"),
    "content-list": (delta({"content": ["a", "b"]}), "choices[0].delta.content"),
    "content-object": (delta({"content": {"text": "a"}}), "choices[0].delta.content"),
    "text-number": ({"choices": [{"text": 7}]}, "choices[0].text"),
    "reasoning-number": (delta({"reasoning_content": 3}), "reasoning_content"),
    "reasoning-list": (delta({"reasoning": ["x"]}), "choices[0].delta.reasoning"),
    "finish-number": ({"choices": [{"delta": {}, "finish_reason": 1}]}, "finish_reason"),
    "usage-string": ({"choices": [], "usage": "many"}, "usage"),
    "usage-list": ({"choices": [], "usage": [1]}, "usage"),
    "tokens-string": ({"choices": [], "usage": {"completion_tokens": "12"}}, "completion_tokens"),
    "tokens-negative": ({"choices": [], "usage": {"completion_tokens": -3}}, "completion_tokens"),
    "tokens-fraction": ({"choices": [], "usage": {"completion_tokens": 1.5}}, "completion_tokens"),
    "tokens-boolean": ({"choices": [], "usage": {"completion_tokens": True}}, "completion_tokens"),
    "prompt-tokens-string": ({"choices": [], "usage": {"prompt_tokens": "7"}}, "prompt_tokens"),
    "cached-details-string": (
        {"choices": [], "usage": {"prompt_tokens_details": "none"}},
        "prompt_tokens_details",
    ),
    "cached-tokens-string": (
        {"choices": [], "usage": {"prompt_tokens_details": {"cached_tokens": "0"}}},
        "cached_tokens",
    ),
    "timings-string": ({"choices": [], "timings": "fast"}, "timings"),
    "predicted-string": ({"choices": [], "timings": {"predicted_n": "3"}}, "predicted_n"),
    "predicted-negative": ({"choices": [], "timings": {"predicted_n": -1}}, "predicted_n"),
    "logprobs-string": (
        {"choices": [{"delta": {"content": "a"}, "logprobs": "high"}]},
        "choices[0].logprobs",
    ),
    "logprob-string": (logprob_item(logprob="high"), "logprob"),
    "logprob-boolean": (logprob_item(logprob=True), "logprob"),
    "logprob-list": (logprob_item(logprob=[1]), "logprob"),
    "logprob-item-string": (
        {"choices": [{"delta": {"content": "a"}, "logprobs": {"content": ["x"]}}]},
        "logprobs.content[0]",
    ),
    "logprob-token-number": (logprob_item(token=5), "token"),
    "top-logprobs-string": (logprob_item(top_logprobs="x"), "top_logprobs"),
    "top-logprob-string": (
        logprob_item(top_logprobs=[{"token": "a", "logprob": "x"}]),
        "top_logprobs[0].logprob",
    ),
    "top-logprob-item-number": (logprob_item(top_logprobs=[3]), "top_logprobs[0]"),
    "legacy-logprob-string": (
        {"choices": [{"text": "a", "logprobs": {"tokens": ["a"], "token_logprobs": ["x"]}}]},
        "token_logprobs[0]",
    ),
    "legacy-tokens-string": (
        {"choices": [{"text": "a", "logprobs": {"tokens": "abc"}}]},
        "logprobs.tokens",
    ),
    "tool-index-string": (tool_call(index="first"), "tool_calls[0].index"),
    "tool-index-fraction": (tool_call(index=0.5), "tool_calls[0].index"),
    "tool-index-negative": (tool_call(index=-1), "tool_calls[0].index"),
    "tool-calls-object": (delta({"tool_calls": {"index": 0}}), "tool_calls"),
    "tool-call-string": (delta({"tool_calls": ["f()"]}), "tool_calls[0]"),
    "tool-function-string": (tool_call(function="f"), "tool_calls[0].function"),
    "tool-name-number": (tool_call(function={"name": 1}), "function.name"),
    "tool-arguments-object": (tool_call(function={"arguments": {"a": 1}}), "function.arguments"),
    "tool-id-number": (tool_call(id=9), "tool_calls[0].id"),
    # numbers past any real count or a float's range (json writes 10**400 as digits)
    "tokens-huge": ({"choices": [], "usage": {"completion_tokens": 10**400}}, "completion_tokens"),
    "tokens-past-2-53": ({"choices": [], "usage": {"prompt_tokens": 2**60}}, "prompt_tokens"),
    "predicted-huge": ({"choices": [], "timings": {"predicted_n": 10**30}}, "predicted_n"),
    "logprob-huge": (logprob_item(logprob=-(10**400)), "logprob"),
    "tool-index-huge": (tool_call(index=10**400), "tool_calls[0].index"),
}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: FakeServer

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        self._route()

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.body = json.loads(self.rfile.read(length) or b"{}")
        self._route()

    def _route(self) -> None:
        scenario, _, rest = self.path.lstrip("/").partition("/")
        self.server.hits.append((scenario, "/" + rest))
        behave = SCENARIOS.get(scenario, {})
        if rest == "v1/models":
            return behave.get("models", _models)(self)
        if rest == "metrics":
            return behave.get("metrics", _no_metrics)(self)
        if rest in ("v1/chat/completions", "v1/completions"):
            return behave.get("chat", _stream(good()))(self)
        return self.reply(404, "application/json", b'{"error": "no such path"}')

    def reply(self, status: int, content_type: str, body: bytes, **headers: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def event(self, data: Any) -> None:
        text = data if isinstance(data, str) else json.dumps(data)
        self.wfile.write(f"data: {text}\n\n".encode())
        self.wfile.flush()


Behaviour = Callable[[Handler], None]


def _models(handler: Handler) -> None:
    handler.reply(200, "application/json", json.dumps(MODELS).encode())


def _no_metrics(handler: Handler) -> None:
    handler.reply(404, "text/plain", b"not found")


def _json(status: int, value: Any) -> Behaviour:
    return lambda h: h.reply(status, "application/json", json.dumps(value).encode())


def _raw(status: int, content_type: str, body: bytes, **headers: str) -> Behaviour:
    return lambda h: h.reply(status, content_type, body, **headers)


def _stream(chunks: list[Any], *, done: bool = True, pause_s: float = 0.0) -> Behaviour:
    def send(handler: Handler) -> None:
        handler.start_stream()
        for chunk in chunks:
            handler.event(chunk)
            time.sleep(pause_s)
        if done:
            handler.event("[DONE]")

    return send


def _redirect_to_self(handler: Handler) -> None:
    handler.reply(302, "text/plain", b"", Location=handler.path)


def _stall(seconds: float, *, first: Chunk | None = None) -> Behaviour:
    def send(handler: Handler) -> None:
        if first is not None:
            handler.start_stream()
            handler.event(first)
        time.sleep(seconds)

    return send


def counted(words: int = 12) -> list[Chunk]:
    """A good reply with llama.cpp's cumulative `timings.predicted_n` on every event."""
    chunks = []
    for n in range(1, words + 1):
        chunk = delta({"content": f"w{n} "})
        chunk["timings"] = {"predicted_n": n}
        chunks.append(chunk)
    final = delta({}, "stop")
    final["timings"] = {"predicted_n": words}
    final["usage"] = {"completion_tokens": words, "prompt_tokens": 5}
    return [*chunks, final]


def _every_other_malformed(handler: Handler) -> None:
    """Odd requests get a good counted reply, even ones a token count as text."""
    handler.server.flaky_count += 1
    if handler.server.flaky_count % 2:
        return _stream(counted(), pause_s=0.002)(handler)
    return _stream([delta({"content": "Hi"}), MALFORMED["tokens-string"][0]])(handler)


def _endless(handler: Handler) -> None:
    """Content events until the client hangs up: a server that ignores max_tokens."""
    handler.start_stream()
    for n in range(100_000):
        handler.event(delta({"content": f"w{n} "}))


def _endless_event(handler: Handler) -> None:
    """`data:` lines that never reach the blank line ending their event."""
    handler.start_stream()
    for _ in range(100_000):
        handler.wfile.write(b"data: x\n")


def _big_model_list(handler: Handler) -> None:
    """A real list, long enough to arrive in many reads: the first model must still be found."""
    models = [{"id": f"model-{n:05d}", "object": "model"} for n in range(20_000)]
    handler.reply(200, "application/json", json.dumps({"data": models}).encode())


def _restarting_metrics(handler: Handler) -> None:
    """A generation counter that goes down at every scrape, as after a server restart."""
    handler.server.flaky_count += 1
    text = _COUNTER.format(1_000_000 - 1000 * handler.server.flaky_count)
    handler.reply(200, "text/plain", text.encode())


def _counting_chat(handler: Handler) -> None:
    """A counted reply that the generation counter of `_counting_metrics` counts, as a server
    alone with its client counts what it generates."""
    handler.server.generated += 12
    _stream(counted(), pause_s=0.002)(handler)


def _counting_metrics(handler: Handler) -> None:
    handler.reply(200, "text/plain", _COUNTER.format(handler.server.generated).encode())


def _depends_on_stream(streamed: Behaviour, whole: Behaviour) -> Behaviour:
    return lambda h: (streamed if h.body.get("stream") else whole)(h)


SCENARIOS: dict[str, dict[str, Behaviour]] = {
    "ok": {},
    **{
        name: {"chat": _stream([delta({"content": "Hi"}), chunk, delta({}, "stop")])}
        for name, (chunk, _) in MALFORMED.items()
    },
    # empty replies and silent endings
    "empty-stop": {"chat": _stream([delta({}, "stop")])},
    "empty-choices": {
        "chat": _depends_on_stream(
            _stream([{"choices": []}, delta({}, "stop")]),
            _json(
                200,
                {"choices": [{"index": 0, "message": {"content": ""}, "finish_reason": "stop"}]},
            ),
        )
    },
    "only-done": {"chat": _stream([])},
    "content-null": {"chat": _stream([delta({"content": None}), delta({}, "length")])},
    "ends-early": {"chat": _stream([delta({"content": "Hel"})], done=False)},
    "comments-only": {"chat": lambda h: (h.start_stream(), h.wfile.write(b": ping\n\n"))},
    # events that are not chunks
    "event-list": {"chat": _stream([[1, 2]])},
    "event-null": {"chat": _stream(["null"])},
    "event-number": {"chat": _stream(["42"])},
    "event-not-json": {"chat": _stream(["{oops"])},
    "event-error": {"chat": _stream([delta({"content": "a"}), {"error": {"message": "boom"}}])},
    "event-deep": {"chat": _stream(["[" * 100_000])},
    # bodies that are not replies
    "body-list": {"chat": _json(200, [1, 2])},
    "body-string": {"chat": _json(200, "hello")},
    "body-choices-number": {"chat": _json(200, {"choices": 5})},
    "body-message-string": {"chat": _json(200, {"choices": [{"message": "hi"}]})},
    "body-deep": {"chat": _raw(200, "application/json", b"[" * 100_000)},
    "body-not-json": {"chat": _raw(200, "text/plain", b"hello there")},
    "body-binary": {"chat": _raw(200, "application/octet-stream", bytes(range(256)))},
    "html-200": {"chat": _raw(200, "text/html", LOGIN_PAGE.encode())},
    "html-500": {"chat": _raw(500, "text/html", LOGIN_PAGE.encode())},
    "huge-500": {"chat": _raw(500, "text/plain", b"x" * 3_000_000)},
    "http-400": {"chat": _json(400, {"error": {"message": "bad request [/INST]"}})},
    "http-401": {"chat": _json(401, {"error": "unauthorized"})},
    "http-404": {"chat": _json(404, {"error": "no such model"})},
    "http-429": {"chat": _json(429, {"error": "slow down"})},
    "http-500": {"chat": _json(500, {"error": {"message": "model exploded"}})},
    "http-503": {"chat": _raw(503, "text/plain", b"loading model")},
    "redirect-loop": {"chat": _redirect_to_self, "models": _redirect_to_self},
    # model lists
    "models-empty": {"models": _json(200, {"object": "list", "data": []})},
    "models-html": {"models": _raw(200, "text/html", LOGIN_PAGE.encode())},
    "models-html-404": {"models": _raw(404, "text/html", LOGIN_PAGE.encode())},
    "models-404": {"models": _json(404, {"error": "not found"})},
    "models-500-huge": {"models": _raw(500, "text/plain", b"y" * 3_000_000)},
    "models-not-json": {"models": _raw(200, "text/plain", b"models: m")},
    "models-no-data": {"models": _json(200, {"object": "list"})},
    "models-data-string": {"models": _json(200, {"data": "m"})},
    "models-list": {"models": _json(200, [{"id": "m"}])},
    "models-id-number": {"models": _json(200, {"data": [{"id": 5}]})},
    "models-entry-string": {"models": _json(200, {"data": ["m"]})},
    "models-deep": {"models": _raw(200, "application/json", b"[" * 100_000)},
    # /metrics
    "metrics-html": {"metrics": _raw(200, "text/html", LOGIN_PAGE.encode())},
    "metrics-500": {"metrics": _raw(500, "text/plain", b"down")},
    "metrics-binary": {"metrics": _raw(200, "text/plain", bytes(range(256)) * 4)},
    **{
        f"metrics-{name}": {"metrics": _raw(200, "text/plain", text.encode())}
        for name, (text, _) in HOSTILE_METRICS.items()
    },
    "models-not-utf8": {"models": _raw(200, "application/json", b'{"data": [{"id": "m\xff"}]}')},
    "every-other-malformed": {"chat": _every_other_malformed},
    "counter-backwards": {
        "chat": _stream(counted(), pause_s=0.002),
        "metrics": _restarting_metrics,
    },
    "counter-counts": {"chat": _counting_chat, "metrics": _counting_metrics},
    "endless": {"chat": _endless},
    "endless-event": {"chat": _endless_event},
    "models-big": {"models": _big_model_list},
    # hangs
    "silent": {"chat": _stall(5.0), "models": _stall(5.0)},
    "one-event-then-silence": {"chat": _stall(5.0, first=delta({"content": "Hi"}))},
}


class FakeServer(ThreadingHTTPServer):
    daemon_threads = True
    hits: list[tuple[str, str]]
    flaky_count: int
    generated: int

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up mid-reply is what half these scenarios provoke: no traceback
        (it would land in the stderr of the command under test)."""

    def url(self, scenario: str) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/{scenario}"


@contextmanager
def running_fake_server() -> Iterator[FakeServer]:
    server = FakeServer(("127.0.0.1", 0), Handler)
    server.hits = []
    server.flaky_count = 0
    server.generated = 0
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def raw_tcp_server(answer: bytes | None, *, hold_s: float = 0.0) -> Iterator[str]:
    """A TCP server that is not HTTP: it sends `answer` (or nothing) to each client, waits
    `hold_s`, and closes. Yields its base URL."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                peer, _ = listener.accept()
            except OSError:
                continue
            with peer:
                if answer:
                    peer.sendall(answer)
                stop.wait(hold_s)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(timeout=2)
        listener.close()
