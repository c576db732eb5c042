"""Whether a model's shape (its Hugging Face config.json) takes a tensor- and pipeline-parallel
layout, by the checks vLLM runs at start. vLLM 0.32.0 on a CPU refused the bundled SmolLM2-135M
(9 attention heads, 3 KV heads) at `--tensor-parallel-size 2` with "Total number of attention
heads (9) must be divisible by tensor parallel size (2)" (shared/vllm-cpu.md).

Pure: the caller reads the file. Nothing in it is trusted: a count that is not a positive whole
number (a string, a boolean, a fraction) is a problem of its own, and the checks that need it are
left out rather than guessed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

# vLLM pads the vocabulary of its embedding and LM head to a multiple of this, then splits the
# padded size over the TP ranks (DEFAULT_VOCAB_PADDING_SIZE,
# vllm/model_executor/layers/vocab_parallel_embedding.py)
VOCAB_PADDING = 64
LARGEST_SUGGESTED_TP = 8  # the fixes list the sizes from 1 to this that pass every error check

# config.json names of each count, first found wins (vLLM reads the same aliases through
# transformers' attribute maps and ModelConfig.get_total_num_kv_heads)
HEAD_KEYS = ("num_attention_heads", "n_head", "n_heads")
KV_HEAD_KEYS = ("num_key_value_heads", "num_kv_heads", "n_head_kv")
LAYER_KEYS = ("num_hidden_layers", "num_layers", "n_layer")
EXPERT_KEYS = ("n_routed_experts", "num_local_experts", "num_experts")
VOCAB_KEYS = ("vocab_size",)
MLA_KEY = "kv_lora_rank"  # an MLA model: vLLM keeps one latent KV head, replicated on every rank
QUANTIZED_KEYS = ("quantization_config", "compression_config")

HEADS_SOURCE = "vllm/config/model.py (ModelConfig.verify_with_parallel_config)"
KV_SOURCE = "vllm/model_executor/layers/linear.py (QKVParallelLinear)"
VOCAB_SOURCE = "vllm/model_executor/layers/vocab_parallel_embedding.py (VocabParallelEmbedding)"
LAYERS_SOURCE = "vllm/distributed/utils.py (get_pp_indices)"
# vLLM's own code does not refuse this one without expert parallelism; the field report's padded
# checkpoint is the evidence (TP=3 needed one, TP=4 did not)
SHAPE_NOTE = "docs/field-notes.md#tp-divides-model-shape"
EXPERTS_SOURCE = SHAPE_NOTE
CONFIG_SOURCE = "the checkpoint's config.json"

Setting = Literal["tensor_parallel_size", "pipeline_parallel_size", "config"]


@dataclass(frozen=True)
class ShapeProblem:
    """One way the layout does not fit the model: `setting` is what to change."""

    severity: Literal["error", "warning"]
    setting: Setting
    message: str  # what is wrong, with the numbers
    fix: str
    source: str  # the vLLM file whose check this is


@dataclass(frozen=True)
class ModelShape:
    """The counts a parallel layout must split; None where the config has none (or a bad one)."""

    attention_heads: int | None
    kv_heads: int | None  # None for MLA too: vLLM treats it as one KV head
    layers: int | None
    experts: int | None
    vocab: int | None
    quantized: bool

    @property
    def padded_vocab(self) -> int | None:
        if self.vocab is None:
            return None
        return -(-self.vocab // VOCAB_PADDING) * VOCAB_PADDING


def parallel_shape_problems(
    config: Mapping[str, object],
    tensor_parallel: int,
    pipeline_parallel: int,
    expert_parallel: bool,
) -> list[ShapeProblem]:
    """Every check vLLM runs at start on this layout, as problems: errors vLLM refuses at start
    (or asserts at model build), warnings where it starts but a checkpoint may not."""
    shape, problems = read_shape(config)
    problems += tensor_parallel_problems(shape, tensor_parallel, expert_parallel)
    if shape.layers is not None and shape.layers < pipeline_parallel:
        problems.append(
            ShapeProblem(
                "error",
                "pipeline_parallel_size",
                f"{shape.layers} hidden layers cannot fill pipeline_parallel_size "
                f"{pipeline_parallel}: vLLM gives each stage a share of the layers, so "
                f"{pipeline_parallel - shape.layers} stages would hold none",
                f"use pipeline_parallel_size {shape.layers} or less",
                LAYERS_SOURCE,
            )
        )
    return problems


def read_shape(config: Mapping[str, object]) -> tuple[ModelShape, list[ShapeProblem]]:
    """The counts, from the top level or else the nested `text_config` (a multimodal model's
    language half), and a warning for each count that is there but not a positive integer."""
    problems: list[ShapeProblem] = []
    heads = _count(config, HEAD_KEYS, problems)
    mla = _lookup(config, (MLA_KEY,)) is not None
    kv = None if mla else _count(config, KV_HEAD_KEYS, problems)
    experts = _count(config, EXPERT_KEYS, problems, zero_is_none=True)
    shape = ModelShape(
        attention_heads=heads,
        # without a KV-head count vLLM takes every attention head as a KV head (plain MHA)
        kv_heads=None if mla else (kv if kv is not None else heads),
        layers=_count(config, LAYER_KEYS, problems),
        experts=experts,
        vocab=_count(config, VOCAB_KEYS, problems),
        quantized=any(_lookup(config, (key,)) is not None for key in QUANTIZED_KEYS),
    )
    return shape, problems


def tensor_parallel_problems(
    shape: ModelShape, tensor_parallel: int, expert_parallel: bool
) -> list[ShapeProblem]:
    """The problems of one TP size, each fix naming the sizes up to LARGEST_SUGGESTED_TP that
    pass every error check."""
    tp = tensor_parallel
    fits = fitting_tensor_parallel_sizes(shape, expert_parallel)
    use = _use(shape, fits, expert_parallel)
    problems = [
        ShapeProblem(
            "error",
            "tensor_parallel_size",
            refusal.message,
            use + refusal.other_way,
            refusal.source,
        )
        for refusal in _errors(shape, tp, expert_parallel)
    ]
    vocab, padded = shape.vocab, shape.padded_vocab
    if vocab is not None and padded is not None and vocab % tp and not padded % tp:
        quantized = (
            "; this checkpoint is quantized (its config.json has a quantization_config)"
            if shape.quantized
            else ""
        )
        even = [size for size in fits if vocab % size == 0]
        problems.append(
            ShapeProblem(
                "warning",
                "tensor_parallel_size",
                f"a vocabulary of {vocab} tokens does not divide by tensor_parallel_size {tp}: "
                f"vLLM pads an unquantized model's to {padded}, but a quantized checkpoint's "
                "LM head may not pad (the field report's TP=3 needed a padded checkpoint)"
                + quantized,
                "nothing to change for an unquantized checkpoint; for a quantized one use a "
                f"checkpoint with its vocabulary padded to a multiple of {tp}, or "
                f"tensor_parallel_size {_either(even)}, which divide{'s' if len(even) == 1 else ''}"
                f" {vocab}",
                VOCAB_SOURCE,
            )
        )
    return problems


def fitting_tensor_parallel_sizes(shape: ModelShape, expert_parallel: bool) -> list[int]:
    """The TP sizes from 1 to LARGEST_SUGGESTED_TP that pass every error check (1 always does)."""
    return [
        size
        for size in range(1, LARGEST_SUGGESTED_TP + 1)
        if not _errors(shape, size, expert_parallel)
    ]


@dataclass(frozen=True)
class _Refusal:
    message: str
    other_way: str  # a way out besides another TP size, after the "use …" phrase
    source: str


def _errors(shape: ModelShape, tp: int, expert_parallel: bool) -> list[_Refusal]:
    """Each check vLLM refuses this TP size by."""
    errors: list[_Refusal] = []
    heads, kv, experts, padded = (
        shape.attention_heads,
        shape.kv_heads,
        shape.experts,
        shape.padded_vocab,
    )
    if heads is not None and heads % tp:
        errors.append(
            _Refusal(
                f"{heads} attention heads do not split over tensor_parallel_size {tp}: vLLM "
                f'refuses it at start ("Total number of attention heads ({heads}) must be '
                f'divisible by tensor parallel size ({tp})")',
                "",
                HEADS_SOURCE,
            )
        )
    if kv is not None and (kv % tp if tp <= kv else tp % kv):
        why = (
            f"{kv} KV heads do not split over tensor_parallel_size {tp}"
            if tp <= kv
            else f"tensor_parallel_size {tp} is above the {kv} KV heads and not a multiple of "
            "them, so vLLM cannot replicate each KV head a whole number of times"
        )
        errors.append(
            _Refusal(
                f"{why}: vLLM's attention layer fails at model build "
                f'("{max(kv, tp)} is not divisible by {min(kv, tp)}")',
                "",
                KV_SOURCE,
            )
        )
    if experts is not None and experts % tp and not expert_parallel:
        errors.append(
            _Refusal(
                f"{experts} experts do not split over tensor_parallel_size {tp} without expert "
                "parallelism: the field report's TP=3 needed a padded checkpoint, and TP=4 none "
                "because the attention heads, experts and vocabulary divide by four",
                ", or add --enable-expert-parallel to extra_args",
                EXPERTS_SOURCE,
            )
        )
    if padded is not None and padded % tp:
        errors.append(
            _Refusal(
                f"a vocabulary of {shape.vocab} tokens, which vLLM pads to {padded} (a multiple "
                f"of {VOCAB_PADDING}), does not split over tensor_parallel_size {tp}: vLLM's "
                f'embedding fails at model build ("{padded} is not divisible by {tp}"), as the '
                "field report's TP=3 needed a padded checkpoint",
                ", or a checkpoint with its vocabulary padded to a multiple of "
                f"{VOCAB_PADDING * tp}",
                VOCAB_SOURCE,
            )
        )
    return errors


def _use(shape: ModelShape, fits: Sequence[int], expert_parallel: bool) -> str:
    """The phrase "use tensor_parallel_size 1 or 3, which divide 9 attention heads and 3 KV
    heads": the attention counts always, experts and vocabulary where they rule out a size the
    heads allow."""
    counts: list[str] = []
    if shape.attention_heads is not None:
        counts.append(f"{shape.attention_heads} attention heads")
    if shape.kv_heads is not None:
        counts.append(f"{shape.kv_heads} KV heads")
    attention_only = ModelShape(
        shape.attention_heads, shape.kv_heads, None, None, None, quantized=False
    )
    allowed = fitting_tensor_parallel_sizes(attention_only, expert_parallel)
    experts = None if expert_parallel else shape.experts
    if experts is not None and any(experts % size for size in allowed):
        counts.append(f"{experts} experts")
    padded = shape.padded_vocab
    if padded is not None and any(padded % size for size in allowed):
        counts.append(f"a vocabulary padded to {padded}")
    use = f"use tensor_parallel_size {_either(fits)}"
    if not counts:
        return use
    verb = "divides" if len(fits) == 1 else "divide"
    above_kv = shape.kv_heads is not None and any(size > shape.kv_heads for size in fits)
    replicated = f" (or, above {shape.kv_heads}, are a multiple of them)" if above_kv else ""
    return f"{use}, which {verb} {_and(counts)}{replicated}"


def _either(sizes: Sequence[int]) -> str:
    words = [str(size) for size in sizes]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def _and(words: Sequence[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _lookup(config: Mapping[str, object], keys: Sequence[str]) -> tuple[str, object] | None:
    """(key, value) of the first of `keys` at the top level with a value, else in text_config."""
    nested = config.get("text_config")
    for table, prefix in ((config, ""), (nested, "text_config.")):
        if not isinstance(table, Mapping):
            continue
        for key in keys:
            if table.get(key) is not None:
                return prefix + key, table[key]
    return None


def _count(
    config: Mapping[str, object],
    keys: Sequence[str],
    problems: list[ShapeProblem],
    *,
    zero_is_none: bool = False,
) -> int | None:
    """The count under the first of `keys`, or None with a warning where it is no positive
    integer (bool is no integer here: JSON's true is not a count)."""
    found = _lookup(config, keys)
    if found is None:
        return None
    key, value = found
    if type(value) is int and value == 0 and zero_is_none:
        return None  # a dense model that names the key with 0 experts
    if type(value) is int and value > 0:
        return value
    problems.append(
        ShapeProblem(
            "warning",
            "config",
            f"{key} is {_shown(value)} ({_kind(value)}), not the positive integer vLLM reads "
            "there: the checks of the parallel layout that need it are skipped",
            f"make {key} a positive whole number, as the checkpoint's published config.json has it",
            CONFIG_SOURCE,
        )
    )
    return None


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _kind(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, float):
        return "a decimal number" if math.isfinite(value) else "not a finite number"
    if isinstance(value, int):
        return "zero or negative"
    if isinstance(value, Mapping):
        return "an object"
    return "a list" if isinstance(value, list) else type(value).__name__
