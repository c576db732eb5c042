"""scripts/model_reference.py, the script that writes the docs' generated tables, loaded by its
path (scripts/ is no package), for the tests that hold the pages to it."""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


@functools.cache
def model_reference() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "model_reference", ROOT / "scripts" / "model_reference.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
