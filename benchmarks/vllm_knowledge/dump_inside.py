"""Runs INSIDE a throwaway venv that holds one vLLM wheel (no GPU): writes, as JSON into the file
named by its one argument, what vLLM's own `vllm serve` parser accepts and what its own
CUDA-graph sizing code does.

Only the standard library and vLLM are imported here; `python -m benchmarks.vllm_knowledge`
(`__main__.py`) runs this file with the venv's python and writes the result into
src/sparkrig/engines/vllm/knowledge/.

The capture sizes come from vLLM's own functions: `VllmConfig._set_cudagraph_sizes` (the grid of
1, 2, 4, multiples of 8, then of 16, cut at an explicit max_cudagraph_capture_size) run on a
stand-in holding only the attributes it reads, and then the real
`CompilationConfig.adjust_cudagraph_sizes_for_spec_decode` (V1 model runner, FULL decode graphs,
tensor parallel without sequence parallelism), which keeps only multiples of k+1.
"""

# vLLM is imported inside the functions: only after the CPU platform is forced (main).
# ruff: noqa: PLC0415
from __future__ import annotations

import argparse
import inspect
import json
import sys
from types import SimpleNamespace
from typing import Any

SEQS = (1, 2, 4, 6, 8, 16, 32, 64, 256)
KS = (0, 1, 3, 5, 7)
EXPLICIT = (None, 8, 24, 30, 32, 36, 40, 48, 64, 72, 128, 512)
MAX_NUM_BATCHED_TOKENS = 8192  # the grid's token budget: far above every explicit size above


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return repr(value)


def serve_parser() -> argparse.ArgumentParser:
    import importlib

    from vllm.utils.argparse_utils import FlexibleArgumentParser

    # `vllm serve`'s make_arg_parser: entrypoints/openai/cli_args.py up to 0.26, moved to
    # entrypoints/launchers/cli_args.py by 0.29 and to entrypoints/common/cli_args.py by 0.33
    modules = (
        "vllm.entrypoints.common.cli_args",
        "vllm.entrypoints.launchers.cli_args",
        "vllm.entrypoints.openai.cli_args",
    )
    for where in modules:
        try:
            make_arg_parser = importlib.import_module(where).make_arg_parser
            break
        except ModuleNotFoundError as error:
            if error.name is None or not where.startswith(error.name):
                raise  # a dependency is missing, not this location: the caller installs it
    else:
        raise SystemExit("no make_arg_parser in this vLLM: add its module to serve_parser")

    top = FlexibleArgumentParser(prog="vllm")
    subparsers = top.add_subparsers()
    serve = subparsers.add_parser("serve", usage="vllm serve [model_tag] [options]")
    parsed: argparse.ArgumentParser = make_arg_parser(serve)
    return parsed


def flags(parser: argparse.ArgumentParser) -> list[dict[str, Any]]:
    rows = []
    for action in parser._actions:
        if not action.option_strings or isinstance(action, argparse._HelpAction):
            continue
        rows.append(
            {
                "options": list(action.option_strings),
                "dest": action.dest,
                "takes_value": action.nargs != 0,
                "nargs": _jsonable(action.nargs),
                "choices": None
                if action.choices is None
                else sorted(str(c) for c in action.choices),
                "default": _jsonable(action.default),
            }
        )
    return rows


def capture(seqs: int, k: int, explicit: int | None) -> dict[str, Any]:
    from vllm.config import CompilationConfig, VllmConfig
    from vllm.config.compilation import CUDAGraphMode

    compilation = CompilationConfig()
    compilation.cudagraph_mode = CUDAGraphMode.FULL_AND_PIECEWISE
    compilation.max_cudagraph_capture_size = explicit
    compilation.cudagraph_capture_sizes = None
    stand_in = SimpleNamespace(
        model_config=SimpleNamespace(enforce_eager=False),
        compilation_config=compilation,
        scheduler_config=SimpleNamespace(
            max_num_seqs=seqs, max_num_batched_tokens=MAX_NUM_BATCHED_TOKENS
        ),
        parallel_config=SimpleNamespace(tensor_parallel_size=1),
        num_speculative_tokens=k,
        uniform_decode_query_len=k + 1,  # 0.29+: a property of VllmConfig, 1 + k
        speculative_config=None,  # no dynamic speculative decoding schedule
        performance_mode="balanced",
    )
    row: dict[str, Any] = {"max_num_seqs": seqs, "k": k, "explicit": explicit}
    try:
        VllmConfig._set_cudagraph_sizes(stand_in)  # type: ignore[arg-type]
        if k > 0:
            adjust = compilation.adjust_cudagraph_sizes_for_spec_decode
            # (query_len, tensor_parallel_size) up to 0.30; (query_len) by 0.33
            takes_tp = "tensor_parallel_size" in inspect.signature(adjust).parameters
            adjust(k + 1, 1) if takes_tp else adjust(k + 1)
    except (ValueError, AssertionError) as error:
        row["error"] = str(error).splitlines()[0][:200]
        return row
    row["sizes"] = list(compilation.cudagraph_capture_sizes or [])
    row["max"] = compilation.max_cudagraph_capture_size
    return row


def force_cpu_platform() -> None:
    """vLLM picks its platform from the build and the hardware; a CUDA wheel on a host without a
    GPU finds none. The CPU platform lets the config classes build; flags, choices and defaults
    are the same dataclass fields on every platform."""
    from vllm import platforms
    from vllm.platforms.cpu import CpuPlatform

    platforms._current_platform = CpuPlatform()


# Flags whose values a release checks when it builds its config instead of in the parser (vLLM
# 0.33 dropped --kv-cache-dtype's argparse choices for a validator over this list): flag dest ->
# (module, list of the values it accepts).
CONFIG_VALIDATED = {"kv_cache_dtype": ("vllm.config.cache", "KV_CACHE_DTYPES")}


def config_validated_choices(rows: list[dict[str, Any]]) -> None:
    """Fill the choices such a flag lacks from the list its validator checks, and say so."""
    import importlib

    for row in rows:
        where = CONFIG_VALIDATED.get(row["dest"])
        if row["choices"] is not None or where is None:
            continue
        values = getattr(importlib.import_module(where[0]), where[1], None)
        if values is not None:
            row["choices"] = sorted(str(v) for v in values)
            row["choices_from"] = f"{where[0]}.{where[1]} (checked when the config is built)"


def reasoning_parsers() -> list[str]:
    from vllm.reasoning import ReasoningParserManager

    return list(ReasoningParserManager.list_registered())


def main() -> None:
    import vllm

    force_cpu_platform()

    parser = serve_parser()
    rows = flags(parser)
    config_validated_choices(rows)
    grid = [capture(s, k, e) for s in SEQS for k in KS for e in EXPLICIT]
    with open(sys.argv[1], "w", encoding="utf-8") as out:  # vLLM logs on stdout
        json.dump(
            {
                "vllm_version": vllm.__version__,
                "flags": rows,
                "reasoning_parsers": reasoning_parsers(),
                "capture_grid": {
                    "max_num_batched_tokens": MAX_NUM_BATCHED_TOKENS,
                    "rows": grid,
                },
            },
            out,
        )


if __name__ == "__main__":
    main()
