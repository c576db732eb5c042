"""The scripts that write the docs' generated parts (scripts/model_reference.py,
scripts/cli_reference.py), loaded by their path (scripts/ is no package), for the tests that
hold the pages to them."""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


@functools.cache
def script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def model_reference() -> ModuleType:
    return script("model_reference")
