"""A fault-injecting, reasoning-emulating proxy in front of an OpenAI-compatible server, used to
prove that every guard fails on the fault it exists to catch. See docs/gateway.md."""

from sparkrig.gateway.config import Fault, GatewayConfig, parse_faults
from sparkrig.gateway.proxy import running_gateway

__all__ = ["Fault", "GatewayConfig", "parse_faults", "running_gateway"]
