"""A fault-injecting, reasoning-emulating proxy in front of an OpenAI-compatible server, used to
prove that every guard fails on the fault it exists to catch. See docs/gateway.md.

The names below load on first use, so a light module of the package (`serve_config`, whose
fields the `gateway serve` options are bound to) imports without the proxy and aiohttp."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sparkrig.gateway.config import Fault, GatewayConfig, parse_faults
    from sparkrig.gateway.proxy import running_gateway

__all__ = ["Fault", "GatewayConfig", "parse_faults", "running_gateway"]
_WHERE = {
    "Fault": "sparkrig.gateway.config",
    "GatewayConfig": "sparkrig.gateway.config",
    "parse_faults": "sparkrig.gateway.config",
    "running_gateway": "sparkrig.gateway.proxy",
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'sparkrig.gateway' has no attribute {name!r}")
    return getattr(import_module(_WHERE[name]), name)
