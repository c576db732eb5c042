"""Terminal tables of a fabric plan: ranks in cable order, cables with their subnets and
addresses, routes for TCP control."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text

from sparkrig.fabric.plan_model import FabricPlan


def plan_summary(plan: FabricPlan) -> Text:
    group = ",".join(plan.tensor_parallel) or "none (not a closed collective)"
    control = "management LAN" if plan.control_plane == "management" else "fabric (relayed routes)"
    return Text(
        f"{plan.cluster}: {plan.topology}, {len(plan.nodes)} nodes, {len(plan.cables)} cables, "
        f"MTU {plan.mtu}, pool {plan.subnet_pool}, TCP control on {control}, "
        f"tensor-parallel group {group}"
    )


def ranks_table(plan: FabricPlan) -> Table:
    table = Table(title="ranks in cable order")
    for column in ("rank", "node", "prev", "next", "control address", "forwards"):
        table.add_column(column)
    for node in plan.nodes:
        table.add_row(
            str(node.rank),
            node.node,
            node.prev or "—",
            node.next or "—",
            f"{node.control_address} ({node.control_interface})",
            "yes" if node.forwarding else "",
        )
    return table


def cables_table(plan: FabricPlan) -> Table:
    table = Table(title="cables")
    for column in ("#", "cable", "root", "subnet", "end 1", "end 2"):
        table.add_column(column)
    for cable in plan.cables:
        for rail in cable.rails:
            ends = [f"{end.node} {end.address.ip} {end.netdev}" for end in rail.ends]
            first = rail.root == 0
            table.add_row(
                str(cable.index) if first else "",
                cable.label if first else "",
                "AB"[rail.root],
                str(rail.subnet),
                *[*ends, "—"][:2],
            )
    return table


def routes_table(plan: FabricPlan) -> Table | None:
    if not plan.routes:
        return None
    table = Table(title="routes for TCP control (data plane stays neighbour to neighbour)")
    for column in ("on", "to", "destination", "via", "dev", "path"):
        table.add_column(column)
    for route in plan.routes:
        table.add_row(
            route.node,
            route.target,
            f"{route.destination}/32",
            str(route.via),
            route.dev,
            " → ".join(route.path) + (" (relayed)" if route.relays else ""),
        )
    return table


def plan_view(plan: FabricPlan) -> Group:
    parts: list[Text | Table] = [plan_summary(plan), ranks_table(plan), cables_table(plan)]
    if (routes := routes_table(plan)) is not None:
        parts.append(routes)
    forwarding = [n.node for n in plan.nodes if n.forwarding]
    if forwarding:
        parts.append(Text(f"IPv4 forwarding on: {', '.join(forwarding)}"))
    parts += [Text(f"warning: {warning}", style="yellow") for warning in plan.warnings]
    return Group(*parts)
