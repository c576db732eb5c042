"""Whether the machine running sparkrig reaches the head's API.

Without a management address or `engine.api_address`, the API is planned at the head's control
address, which on a cluster without a management LAN is a cable address (the plan's
`api_on_cables`): only the cluster's nodes reach it, so readiness, bench and check from a laptop
fail. `up` asks this machine's
routing table (`ip -j route get`) before it says so in its plan, and a start that fails because
no connection from here gets through names the same fix. The verdicts are pure functions of
what `ip` answered and what readiness saw; `ask_route` is the one call that runs anything.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from sparkrig.engines.launch_spec import ProcessSpec
from sparkrig.errors import ExecutorError
from sparkrig.fabric.runner import CommandResult, CommandRunner
from sparkrig.launch.cluster_plan import LaunchPlan
from sparkrig.launch.readiness import Sighting

Reach = Literal["reached", "no-route", "default-route", "unknown"]


@dataclass(frozen=True)
class RouteAnswer:
    """What this machine's routing table says about one address."""

    reach: Reach
    detail: str = ""
    """the route taken or the error, in `ip`'s words"""


def api_host(plan: LaunchPlan) -> str:
    return urlsplit(plan.api_url).hostname or plan.api_url


def api_fix(head: str) -> str:
    # every node or none: the fabric plan refuses management addresses on only some nodes
    return (
        "set engine.api_address to an address this machine reaches, or give every node a "
        f"management address (the API then takes head {head}'s)"
    )


def route_verdict(chosen: CommandResult, matching: CommandResult | None) -> RouteAnswer:
    """From `ip -j route get ADDR` (the route the kernel would take) and `ip -j route show match
    ADDR` (every route covering it): reached when the address is this machine's own, on a
    connected subnet, or has a route of its own; not when there is no route, or only the
    default route leads there (a LAN's gateway knows nothing of the cables)."""
    if not chosen.ok:
        said = chosen.error_line
        no_route = any(words in said.lower() for words in ("unreachable", "no route"))
        return RouteAnswer("no-route" if no_route else "unknown", said)
    route = _first_route(chosen.stdout)
    if route is None:
        return RouteAnswer("unknown", "ip route get printed no route")
    if route.get("type") == "local":
        return RouteAnswer("reached", "an address of this machine")
    gateway, dev = route.get("gateway"), route.get("dev")
    taken = " ".join(
        filter(None, (f"via {gateway}" if gateway else "", f"dev {dev}" if dev else ""))
    )
    covering = _routes(matching.stdout) if matching is not None and matching.ok else []
    # a connected subnet, or a route of its own through a gateway; else only the default route
    if not gateway or any(r.get("dst") != "default" for r in covering):
        return RouteAnswer("reached", taken)
    return RouteAnswer("default-route", taken)


def _routes(text: str) -> list[dict[str, Any]]:
    try:
        found = json.loads(text)
    except ValueError:
        return []
    return [r for r in found if isinstance(r, dict)] if isinstance(found, list) else []


def _first_route(text: str) -> dict[str, Any] | None:
    routes = _routes(text)
    return routes[0] if routes else None


def api_reach_warning(plan: LaunchPlan, answer: RouteAnswer | None) -> str | None:
    """One line when the API is on a cable and this machine's routes do not lead there; None
    when it is not on a cable, or the answer says it is reached (or nothing was asked)."""
    if not plan.api_on_cables or answer is None or answer.reach == "reached":
        return None
    why = {
        "no-route": f"this machine has no route to it ({answer.detail})",
        "default-route": f"this machine would send it to its default route ({answer.detail})",
        "unknown": f"this machine's route to it is unknown ({answer.detail})",
    }[answer.reach]
    return (
        f"the API is planned at {api_host(plan)}, a cable address only the cluster's nodes "
        f"reach, and {why} — {api_fix(plan.head)}"
    )


def head_is_here(plan: LaunchPlan) -> bool:
    """The head is reached by the local executor: sparkrig runs on it, and its own addresses,
    cable ones too, are reached."""
    access = next((a for a in plan.access if a.node == plan.head), None)
    return access is not None and access.executor.kind == "local"


def ask_route(here: CommandRunner, address: str) -> RouteAnswer:
    """Ask this machine's routing table, through `here` (the local executor)."""
    try:
        chosen = here.run(["ip", "-j", "route", "get", address])
        if not chosen.ok:
            return route_verdict(chosen, None)
        return route_verdict(chosen, here.run(["ip", "-j", "route", "show", "match", address]))
    except ExecutorError:
        return RouteAnswer("unknown", "ip could not run here")


def unreached_api_warning(plan: LaunchPlan, here: CommandRunner) -> str | None:
    """The plan's warning when its API is on a cable this machine does not reach, else None.
    Nothing is asked when the API is not on a cable, or when this machine is the head."""
    if not plan.api_on_cables or head_is_here(plan):
        return None
    return api_reach_warning(plan, ask_route(here, api_host(plan)))


def api_cut_off(plan: LaunchPlan, seen: Iterable[tuple[ProcessSpec, Sighting]]) -> str | None:
    """Why a start failed, when the cause is this machine: the API's node sees its port open,
    but no connection from here to a cable address gets through. None otherwise."""
    if not plan.api_on_cables:
        return None
    for process, sighting in seen:
        if (
            process.ready_when == "health"
            and sighting.observation.port_open
            and sighting.api_error is not None
        ):
            return (
                f"node {process.node}: {process.name} listens on port {process.port}, but this "
                f"machine cannot connect to {plan.api_url} ({sighting.api_error}), a cable "
                f"address only the cluster's nodes reach — {api_fix(plan.head)}"
            )
    return None
