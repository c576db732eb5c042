"""A node's part of the plan as host changes: MTU, link up, addresses, routes, forwarding.

One list feeds both the rendered `ip` script and `fabric apply`, so what is printed is what
runs. Each step knows how to read the state it changes, so the journal can undo exactly.
"""

from __future__ import annotations

from typing import Literal

from sparkrig.fabric.plan_model import FabricPlan
from sparkrig.frozen_model import FrozenModel

FORWARDING_SYSCTL = "net.ipv4.ip_forward"
KERNEL_DEFAULT_MTU = 1500


class Step(FrozenModel):
    node: str
    kind: Literal["mtu", "link-up", "address", "route", "sysctl"]
    target: str
    """the interface, address, route destination or sysctl key the step changes"""
    value: str
    """the MTU, `up`, the CIDR, the route spec or the sysctl value it sets"""
    apply: list[str]
    undo: list[str]
    """the undo when the state before was the kernel's default (the rendered undo script);
    `fabric apply` journals the undo for the state it actually found"""


def node_steps(plan: FabricPlan, node: str) -> list[Step]:
    node_plan = plan.node(node)
    steps: list[Step] = []
    for interface in node_plan.interfaces:
        dev = interface.netdev
        steps.append(
            Step(
                node=node,
                kind="mtu",
                target=dev,
                value=str(interface.mtu),
                apply=["ip", "link", "set", "dev", dev, "mtu", str(interface.mtu)],
                undo=["ip", "link", "set", "dev", dev, "mtu", str(KERNEL_DEFAULT_MTU)],
            )
        )
        steps.append(
            Step(
                node=node,
                kind="link-up",
                target=dev,
                value="up",
                apply=["ip", "link", "set", "dev", dev, "up"],
                undo=["ip", "link", "set", "dev", dev, "down"],
            )
        )
        cidr = str(interface.address)
        steps.append(
            Step(
                node=node,
                kind="address",
                target=dev,
                value=cidr,
                apply=["ip", "address", "add", cidr, "dev", dev],
                undo=["ip", "address", "del", cidr, "dev", dev],
            )
        )
    for route in node_plan.routes:
        where = [f"{route.destination}/32", "via", str(route.via), "dev", route.dev]
        steps.append(
            Step(
                node=node,
                kind="route",
                target=f"{route.destination}/32",
                value=" ".join([*where[1:], "src", str(route.src)]),
                apply=["ip", "route", "add", *where, "src", str(route.src)],
                undo=["ip", "route", "del", *where],
            )
        )
    if node_plan.forwarding:
        steps.append(
            Step(
                node=node,
                kind="sysctl",
                target=FORWARDING_SYSCTL,
                value="1",
                apply=["sysctl", "-w", f"{FORWARDING_SYSCTL}=1"],
                undo=["sysctl", "-w", f"{FORWARDING_SYSCTL}=0"],
            )
        )
    return steps
