"""scripts/vllm-knowledge's pure parts: the committed file format reads back as written, and a
moved vLLM module is never taken for a missing dependency (installing "vllm" from PyPI would
replace the wheel under study)."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.vllm_knowledge.__main__ import MISSING, compact_json

KNOWLEDGE = Path(__file__).resolve().parents[2] / "src/sparkrig/engines/vllm/knowledge"


def test_every_committed_file_is_in_the_scripts_own_format() -> None:
    for path in sorted(KNOWLEDGE.glob("vllm-*.json")):
        text = path.read_text(encoding="utf-8")
        assert compact_json(json.loads(text)) == text, path.name


def test_the_missing_module_is_read_from_the_error() -> None:
    assert MISSING.findall("ModuleNotFoundError: No module named 'cpuinfo'") == ["cpuinfo"]
    assert MISSING.findall("No module named 'vllm.entrypoints.openai.cli_args'") == ["vllm"]
