"""Capture a live server's replies as fixtures: run on the GPU machine against the vLLM that
`sparkrig up` started (`python3 benchmarks/vllm_gpu/capture.py URL MODEL OUT_DIR [LABEL]`).

A LABEL starting with `think` asks the reasoning questions instead (think_asks: the server of
vllm-h200-think.toml, directly or through `gateway serve`). Standard library only, so it runs
before anything else is installed. Every reply is written raw
(status line, content type, body bytes as text) into OUT_DIR/LABEL-NAME.txt, and an index of
what was asked into OUT_DIR/LABEL-index.json; tests/fixtures/vllm/ keeps what these produced.
"""

from __future__ import annotations

import json
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}


def asks(model: str) -> dict[str, tuple[str, str, object | None]]:
    user = [{"role": "user", "content": "Count from 1 to 5."}]
    return {
        "health": ("GET", "/health", None),
        "models": ("GET", "/v1/models", None),
        "metrics": ("GET", "/metrics", None),
        "tokenize": ("POST", "/tokenize", {"model": model, "prompt": "Hello, world!"}),
        "chat-stream-usage": (
            "POST",
            "/v1/chat/completions",
            {
                "model": model,
                "messages": user,
                "max_tokens": 16,
                "temperature": 0,
                "stream": True,
                "stream_options": {"include_usage": True, "continuous_usage_stats": True},
            },
        ),
        "completion-stream-logprobs": (
            "POST",
            "/v1/completions",
            {
                "model": model,
                "prompt": "The capital of France is",
                "max_tokens": 8,
                "temperature": 0,
                "logprobs": 2,
                "stream": True,
                "stream_options": {"include_usage": True},
            },
        ),
        "chat-logprobs": (
            "POST",
            "/v1/chat/completions",
            {
                "model": model,
                "messages": user,
                "max_tokens": 8,
                "temperature": 0,
                "logprobs": True,
                "top_logprobs": 2,
            },
        ),
        "chat-json-schema-stream": (
            "POST",
            "/v1/chat/completions",
            {
                "model": model,
                "messages": [{"role": "user", "content": "Give a person as JSON."}],
                "max_tokens": 48,
                "temperature": 0,
                "stream": True,
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {"name": "person", "schema": SCHEMA},
                },
            },
        ),
        "error-400-max-tokens": (
            "POST",
            "/v1/chat/completions",
            {"model": model, "messages": user, "max_tokens": 10_000_000},
        ),
        "error-404-model": (
            "POST",
            "/v1/chat/completions",
            {"model": "no-such-model", "messages": user, "max_tokens": 4},
        ),
    }


def think_asks(model: str, label: str) -> dict[str, tuple[str, str, object | None]]:
    """The reasoning shapes of the field reports on a template that opens <think> in the prompt
    (docs/field-notes.md#empty-content-table, #stop-in-reasoning, #reasoning-none-thinking), on a
    server whose default chat-template kwargs turn thinking on (vllm-h200-think.toml): thinking
    inherited, on and off, streamed and whole; a stop string that occurs in the thinking;
    reasoning_effort "none" at the top level and inside chat_template_kwargs (report 004's shape);
    thinking off beside a top-level effort; an effort alone inside the kwargs (report 004's agent
    benchmark); a switch sent as text; and vLLM's thinking_token_budget, which forces </think> so
    a reply has both parts. Through the gateway (a label ending in "gateway") its
    /gateway/metrics comes last: the per-request findings."""
    user = [{"role": "user", "content": "What's 1 + 1?"}]

    def chat(max_tokens: int, **extra: object) -> tuple[str, str, object | None]:
        body = {"model": model, "messages": user, "max_tokens": max_tokens, "temperature": 0}
        return ("POST", "/v1/chat/completions", body | extra)

    on = {"chat_template_kwargs": {"thinking": True}}
    off = {"chat_template_kwargs": {"thinking": False}}
    usage = {"stream_options": {"include_usage": True}}
    budget = {"thinking_token_budget": 24}
    stream = {"stream": True, **usage}
    asks: dict[str, tuple[str, str, object | None]] = {
        "models": ("GET", "/v1/models", None),
        "inherit": chat(512),
        "inherit-stream": chat(512, **stream),
        "on": chat(512, **on),
        "on-stream": chat(512, **on, **stream),
        "off": chat(128, **off),
        "off-stream": chat(128, **off, **stream),
        "budget": chat(160, **budget),
        "budget-stream": chat(160, **budget, **stream),
        "inherit-stop": chat(512, stop=[" is"]),
        "on-stop-stream": chat(512, **on, stop=[" is"], **stream),
        "budget-stop": chat(160, **budget, stop=[" is"]),
        "effort-none": chat(512, reasoning_effort="none"),
        "effort-none-on": chat(512, **on, reasoning_effort="none"),
        "effort-none-kwargs": chat(
            512, chat_template_kwargs={"thinking": True, "reasoning_effort": "none"}
        ),
        "effort-high": chat(160, **budget, reasoning_effort="high"),
        # thinking off plus a top-level effort: vLLM adds enable_thinking true; replayed on a
        # CPU (benchmarks/vllm_replay), vLLM 0.26.0 files the whole reply as reasoning and the
        # streamed one as content on this template
        "effort-high-off": chat(160, **off, reasoning_effort="high"),
        "effort-high-off-stream": chat(160, **off, reasoning_effort="high", **stream),
        # report 004's agent-benchmark body: the effort inside the kwargs, nothing else
        "effort-low-kwargs": chat(512, chat_template_kwargs={"reasoning_effort": "low"}),
        # a switch sent as text: the CPU replay thinks on it, "false" or not
        "thinking-false-as-text": chat(160, chat_template_kwargs={"thinking": "false"}),
        "short-budget": chat(24, **on),
    }
    if label.endswith("gateway"):
        asks["gateway-metrics"] = ("GET", "/gateway/metrics", None)
    return asks


def fetch(base: str, method: str, path: str, body: object | None) -> tuple[int, str, bytes]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + path, data=data, method=method)  # noqa: S310
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=120) as response:  # noqa: S310
            return response.status, response.headers.get("content-type", ""), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("content-type", ""), exc.read()


def main() -> int:
    base, model, out = sys.argv[1].rstrip("/"), sys.argv[2], Path(sys.argv[3])
    label = sys.argv[4] if len(sys.argv) > 4 else "vllm"
    out.mkdir(parents=True, exist_ok=True)
    index = []
    chosen = think_asks(model, label) if label.startswith("think") else asks(model)
    for name, (method, path, body) in chosen.items():
        began = time.time()
        try:
            status, kind, raw = fetch(base, method, path, body)
        except OSError as exc:
            status, kind, raw = -1, "", repr(exc).encode()
        (out / f"{label}-{name}.txt").write_bytes(raw)
        index.append(
            {
                "name": name,
                "method": method,
                "path": path,
                "request": body,
                "status": status,
                "content_type": kind,
                "bytes": len(raw),
                "seconds": round(time.time() - began, 3),
            }
        )
        print(f"{name}: HTTP {status}, {len(raw)} bytes")
    (out / f"{label}-index.json").write_text(json.dumps(index, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
