"""A copy of the converted model folder whose vocabulary holds `<think>` and `</think>`.

vLLM's think parsers look both up in the model's vocabulary when the engine starts, and
SmolLM2's has neither: vLLM 0.26.0 refused to start with `--reasoning-parser deepseek_r1` on it
("could not locate think start/end tokens in the tokenizer", benchmarks/results/vllm-h200/
2026-12-05/think). Two of SmolLM2's special tokens that chat never uses (ids 15 and 16,
`<jupyter_script>` and `<empty_output>`) are renamed to `<think>` and `</think>` and made
ordinary added tokens, as DeepSeek's own tokenizers hold them: a special token would be dropped
from the reply's text by the detokenizer, and the parser would never see it. The weights are not
touched (linked, not copied), so the model writes what it wrote before; the template opens
`<think>` in the prompt, and a request's `thinking_token_budget` makes vLLM force `</think>`.

Run: python3 think_model.py MODEL_DIR OUT_DIR   (standard library; transformers, where it can
be imported, checks the result: each tag one token, kept in decoded text)
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

RENAMED = {15: "<think>", 16: "</think>"}  # SmolLM2: <jupyter_script>, <empty_output>


def rename_tokens(tokenizer: dict[str, Any], renamed: dict[int, str]) -> dict[str, Any]:
    """tokenizer.json with each id's token renamed in the vocabulary and the added tokens,
    and made an ordinary (not special) added token."""
    vocab: dict[str, int] = tokenizer["model"]["vocab"]
    by_id = {index: token for token, index in vocab.items()}
    for index, name in renamed.items():
        if index not in by_id:
            raise SystemExit(f"tokenizer.json has no id {index} to rename to {name}")
        if name in vocab and vocab[name] != index:
            raise SystemExit(f"tokenizer.json already holds {name} as id {vocab[name]}")
        del vocab[by_id[index]]
        vocab[name] = index
    for added in tokenizer.get("added_tokens", []):
        if added.get("id") in renamed:
            added["content"] = renamed[added["id"]]
            added["special"] = False
    return tokenizer


def rename_config(config: dict[str, Any], old: dict[int, str], renamed: dict[int, str]) -> dict:
    """tokenizer_config.json to match: the added-token table, and the old names out of the
    special-token lists."""
    for index, name in renamed.items():
        entry = config.get("added_tokens_decoder", {}).get(str(index))
        if entry is not None:
            entry["content"] = name
            entry["special"] = False
    gone = set(old.values())
    for key in ("additional_special_tokens", "extra_special_tokens"):
        if isinstance(config.get(key), list):
            config[key] = [token for token in config[key] if token not in gone]
    return config


def make(model: Path, out: Path) -> None:
    partial = out.with_name(out.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    for each in model.iterdir():
        if each.suffix == ".safetensors":
            (partial / each.name).symlink_to(each.resolve())
        elif each.is_file():
            shutil.copy2(each, partial / each.name)
    tokenizer = json.loads((model / "tokenizer.json").read_text())
    vocab = tokenizer["model"]["vocab"]
    old = {index: token for token, index in vocab.items() if index in RENAMED}
    text = json.dumps(rename_tokens(tokenizer, RENAMED), ensure_ascii=False)
    (partial / "tokenizer.json").write_text(text)
    config_path = partial / "tokenizer_config.json"
    if config_path.exists():
        config = rename_config(json.loads(config_path.read_text()), old, RENAMED)
        config_path.write_text(json.dumps(config, indent=2, ensure_ascii=False))
    check(partial)
    shutil.rmtree(out, ignore_errors=True)
    partial.rename(out)
    print(f"{out}: {', '.join(f'{old[i]} -> {n} (id {i})' for i, n in RENAMED.items())}")


def check(folder: Path) -> None:
    try:
        from transformers import AutoTokenizer  # type: ignore[import-not-found]  # noqa: PLC0415
    except ImportError:
        print("transformers not importable here: the tokenizer was not checked")
        return
    tokenizer = AutoTokenizer.from_pretrained(folder)
    for index, name in RENAMED.items():
        ids = tokenizer.encode(name, add_special_tokens=False)
        text = tokenizer.decode([index], skip_special_tokens=True)
        if ids != [index] or text != name:
            raise SystemExit(f"{name}: encodes to {ids}, id {index} decodes to {text!r}")
    print(f"checked with transformers: {sorted(RENAMED.values())} one token each, kept in text")


def main() -> None:
    if len(sys.argv) != 3:
        raise SystemExit("usage: python3 think_model.py MODEL_DIR OUT_DIR")
    make(Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve())


if __name__ == "__main__":
    main()
