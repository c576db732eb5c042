"""Outside `engines/`, code asks the engine adapter; it does not compare against engine names.

`config/` keeps the one validator that must refuse a setting when a cluster file loads (it sits
below `engines/` and cannot ask an adapter); the conformance test ties it to the adapter's
`unsupported_settings`. The scanner is shown to catch a branch, so a clean pass means something.
"""

from __future__ import annotations

import ast
from pathlib import Path

from sparkrig.engines.registry import ENGINES

SRC = Path(__file__).parents[2] / "src" / "sparkrig"
ENGINE_NAMES = {name for a in ENGINES.entries() for name in (a.kind, a.metrics_name)}
EXEMPT = {
    "engines",  # the adapters themselves
    "config",  # EngineKind, and profile.speculative refused for llama.cpp at load time
}
# vLLM's cache_config_info labels read back against the profile: a check only vLLM's /metrics
# can feed, keyed on the engine the scrape came from
ALLOWED = {
    ("doctor/live.py", "vllm"),
    # vLLM-only facts that no other engine has: its release's parser data (lint/rules_vllm.py,
    # the unset-utilisation default in lint/rules_engine.py, doctor's declared release), its
    # boot-log and cache_config_info shapes (launch/forensics.py, launch/kv_pool.py, which also
    # reads llama.cpp's /slots). Moving these behind the adapter is still to do.
    ("doctor/session.py", "vllm"),
    ("launch/forensics.py", "vllm"),
    ("launch/kv_pool.py", "vllm"),
    ("launch/kv_pool.py", "llamacpp"),
    ("lint/rules_engine.py", "vllm"),
    # vLLM's own refusal of a parallel layout its model cannot take (vllm/config/model.py)
    ("lint/rules_model_shape.py", "vllm"),
    ("lint/rules_vllm.py", "vllm"),
}


def engine_branches(source: str) -> list[tuple[int, str]]:
    """(line, name) of every comparison with, or dict keyed by, an engine's name."""
    found = []
    for node in ast.walk(ast.parse(source)):
        constants: list[ast.expr] = []
        if isinstance(node, ast.Compare):
            constants = [node.left, *node.comparators]
        elif isinstance(node, ast.Dict):
            constants = [key for key in node.keys if key is not None]
        for expr in constants:
            if isinstance(expr, ast.Constant) and expr.value in ENGINE_NAMES:
                found.append((expr.lineno, str(expr.value)))
    return found


def test_the_scanner_catches_a_branch_on_the_engine() -> None:
    assert engine_branches('x = a if cluster.engine.kind == "vllm" else b') == [(1, "vllm")]
    assert engine_branches('m = {"llama.cpp": 1}\nif "llamacpp" != k: pass') == [
        (1, "llama.cpp"),
        (2, "llamacpp"),
    ]
    assert engine_branches('adapter = adapter_for(cluster.engine.kind)\nname = "vllm"') == []


def test_no_module_outside_engines_branches_on_an_engine_name() -> None:
    branches = []
    for path in sorted(SRC.rglob("*.py")):
        relative = path.relative_to(SRC).as_posix()
        if relative.split("/")[0] in EXEMPT:
            continue
        for line, name in engine_branches(path.read_text()):
            if (relative, name) not in ALLOWED:
                branches.append(f"{relative}:{line} compares with {name!r} — ask the adapter")
    assert branches == []
