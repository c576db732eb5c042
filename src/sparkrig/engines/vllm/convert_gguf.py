"""Turn the bundled GGUF into a model folder that vLLM serves: bf16 safetensors, config, tokenizer.

transformers loads a GGUF with `gguf_file=` (the gguf package de-quantizes it) but refuses to
`save_pretrained` what it loaded, so the pieces are written one by one: the state dict with
safetensors less `lm_head.weight` (tied to the embeddings; vLLM ties it back), the config
without its `quantization_config`, the generation config, and the tokenizer with its chat
template. On the H200 host de-quantizing took 19 s and vLLM served the result (README.md).
The folder is written beside the target and renamed into place, so a half-made one never counts.

Run: python3 convert_gguf.py MODEL.gguf OUT_DIR   (assemble.py runs it with PYTHONPATH set)
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

DONE_MARK = ".converted-from"  # holds the GGUF's name and sha256, written last


def convert(gguf: Path, out: Path, source_id: str) -> None:
    # heavy, and absent where this file is only linted: imported where the work happens
    import torch  # noqa: PLC0415
    from safetensors.torch import save_file  # type: ignore[import-not-found]  # noqa: PLC0415
    from transformers import (  # type: ignore[import-not-found]  # noqa: PLC0415
        AutoModelForCausalLM,
        AutoTokenizer,
    )

    started = time.monotonic()
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(
        gguf.parent, gguf_file=gguf.name, dtype=torch.bfloat16
    )
    loaded = time.monotonic() - started
    partial = out.with_name(out.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    state = {name: tensor.contiguous() for name, tensor in model.state_dict().items()}
    if getattr(model.config, "tie_word_embeddings", False):
        state.pop("lm_head.weight", None)
    save_file(state, partial / "model.safetensors", metadata={"format": "pt"})
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.config.dtype = torch.bfloat16
    model.config.save_pretrained(partial)
    if model.generation_config is not None:
        model.generation_config.save_pretrained(partial)
    tokenizer.save_pretrained(partial)
    reloaded = AutoTokenizer.from_pretrained(partial)
    if not reloaded.chat_template:
        raise SystemExit(f"the tokenizer written to {partial} lost its chat template")
    (partial / DONE_MARK).write_text(source_id + "\n")
    shutil.rmtree(out, ignore_errors=True)
    partial.rename(out)
    size = sum(tensor.numel() * tensor.element_size() for tensor in state.values())
    print(
        f"{gguf.name} -> {out}: {len(state)} tensors, {size / 1e6:.0f} MB bf16"
        f" (load + de-quantize {loaded:.0f} s, all {time.monotonic() - started:.0f} s)"
    )


def main() -> None:
    if len(sys.argv) not in (3, 4):
        raise SystemExit("usage: python3 convert_gguf.py MODEL.gguf OUT_DIR [SOURCE_ID]")
    gguf, out = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    convert(gguf, out, sys.argv[3] if len(sys.argv) == 4 else gguf.name)


if __name__ == "__main__":
    main()
