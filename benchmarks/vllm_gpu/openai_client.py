"""The official `openai` Python client as the caller of `sparkrig gateway serve` (in front of
vLLM): chat streamed and not, a completion, and the model list. Exit 1 if any reply is empty.

    python3 benchmarks/vllm_gpu/openai_client.py GATEWAY_URL MODEL OUT.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from openai import OpenAI


def main() -> int:
    url, model, out = sys.argv[1].rstrip("/"), sys.argv[2], Path(sys.argv[3])
    client = OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0, timeout=60)
    messages: Any = [{"role": "user", "content": "Name three colours, one per line."}]
    results: dict[str, Any] = {"models": [m.id for m in client.models.list().data]}
    reply = client.chat.completions.create(model=model, messages=messages, max_tokens=32)
    results["chat"] = {
        "content": reply.choices[0].message.content,
        "finish_reason": reply.choices[0].finish_reason,
        "usage": reply.usage.model_dump() if reply.usage else None,
    }
    chunks, text, usage = 0, "", None
    stream = client.chat.completions.create(
        model=model,
        messages=messages,
        max_tokens=32,
        stream=True,
        stream_options={"include_usage": True},
    )
    for chunk in stream:
        chunks += 1
        if chunk.choices and chunk.choices[0].delta.content:
            text += chunk.choices[0].delta.content
        if chunk.usage is not None:
            usage = chunk.usage.model_dump()
    results["chat_stream"] = {"content": text, "chunks": chunks, "usage": usage}
    done = client.completions.create(model=model, prompt="The sky is", max_tokens=16)
    results["completion"] = {"text": done.choices[0].text, "usage": done.usage.model_dump()}
    out.write_text(json.dumps(results, indent=1))
    print(json.dumps(results))
    empty = [k for k in ("chat", "chat_stream") if not results[k]["content"]]
    empty += [] if results["completion"]["text"] else ["completion"]
    return 1 if empty or model not in results["models"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
