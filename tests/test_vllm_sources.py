"""The "Proven on which vLLM" table of docs/contributing/launch-evidence.md counts the test
functions that touch vLLM behaviour by what they ran against, and this test counts them again from
the tests' own source: a function that takes the session's live CPU vLLM (`vllm_cpu`), one in a
file that reads the GPU test bed's live captures of vLLM 0.26.0, and one in a file that reads
another vLLM capture or stand-in (vLLM's own code replayed on a CPU, serve logs, /metrics texts,
the fake `vllm`)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

TESTS = Path(__file__).parent
DOC = TESTS.parent / "docs" / "contributing" / "launch-evidence.md"
GPU_LIVE = re.compile(r"tests\.vllm_live|fixtures\" / \"vllm\" / \"live\"|vllm/live")
CAPTURE = re.compile(
    r"fixtures\" / \"vllm\"|vllm_metrics\.txt|fixtures/vllm|vllm_replay|fake_vllm|fake_ranks"
)


def _test_functions(tree: ast.Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [
        node
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.name.startswith("test_")
    ]


def counted() -> dict[str, int]:
    counts = {"cpu": 0, "gpu": 0, "capture": 0}
    for path in sorted(TESTS.rglob("test_*.py")):
        if path == Path(__file__):
            continue
        text = path.read_text()
        for function in _test_functions(ast.parse(text)):
            if "vllm_cpu" in {arg.arg for arg in function.args.args}:
                counts["cpu"] += 1
            elif GPU_LIVE.search(text):
                counts["gpu"] += 1
            elif CAPTURE.search(text):
                counts["capture"] += 1
    return counts


def documented() -> dict[str, int]:
    table = (
        DOC.read_text().split("<!-- vllm-sources:start -->")[1].split("<!-- vllm-sources:end")[0]
    )
    rows = [line.strip("|").split("|") for line in table.strip().splitlines()[2:]]
    keys = {"0.32.0 CPU build, live": "cpu", "0.26.0 GPU, live captures": "gpu"}
    return {keys.get(cells[0].strip(), "capture"): int(cells[1]) for cells in rows}


def test_the_proven_on_table_counts_what_the_tests_run_against() -> None:
    assert documented() == counted()
