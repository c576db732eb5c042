"""Every engine sparkrig drives, by `engine.kind`. Adding an engine is adding its package and
one line here (docs/architecture.md, "Adding an engine")."""

from __future__ import annotations

from sparkrig.engines.adapter import EngineAdapter
from sparkrig.engines.llamacpp.adapter import LLAMACPP
from sparkrig.engines.vllm.adapter import VLLM
from sparkrig.registry import Registry

ENGINES: Registry[EngineAdapter] = Registry("engine")
ENGINES.add(LLAMACPP.kind, LLAMACPP)
ENGINES.add(VLLM.kind, VLLM)


def adapter_for(kind: str) -> EngineAdapter:
    """The adapter of `engine.kind`; a UsageError naming the known kinds otherwise."""
    return ENGINES.get(kind)


def adapter_by_metrics_name(name: str | None) -> EngineAdapter | None:
    """The adapter a metrics snapshot or receipt names (`llama.cpp`, `vllm`), if any."""
    return next((a for a in ENGINES.entries() if a.metrics_name == name), None)
