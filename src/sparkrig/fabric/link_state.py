"""Whether each cable interface of a node is there, up and carrying: read from `ip -j link show`
on the node, before a fabric test starts a worker. A cable pulled out (no carrier) or a link
left down otherwise surfaces as a collective library's raw connect error on one rank."""

from __future__ import annotations

import json

from sparkrig.fabric.plan_model import FabricPlan


def cable_problems(plan: FabricPlan, node: str, ip_json: str) -> list[str]:
    """Each of the node's cable interfaces that is missing, down or without carrier, in words
    (`b p1a (cable to a): no carrier`); empty when all carry. Unreadable output is one problem."""
    try:
        links = json.loads(ip_json)
    except json.JSONDecodeError:
        return [f"{node}: `ip -j link show` printed no JSON"]
    state = {
        link.get("ifname"): link
        for link in links
        if isinstance(link, dict) and isinstance(link.get("ifname"), str)
    }
    problems = []
    for interface in plan.node(node).interfaces:
        where = f"{node} {interface.netdev} (cable to {interface.peer})"
        link = state.get(interface.netdev)
        flags = link.get("flags") if link is not None else None
        flags = flags if isinstance(flags, list) else []
        if link is None:
            problems.append(f"{where}: no such interface")
        elif "UP" not in flags:
            problems.append(f"{where}: down")
        elif "NO-CARRIER" in flags or link.get("operstate") in ("DOWN", "LOWERLAYERDOWN"):
            problems.append(f"{where}: no carrier")
    return problems
