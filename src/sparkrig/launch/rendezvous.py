"""Why a multi-node start never became ready when every process is alive: a worker node that
cannot open a connection to the head's rendezvous (vLLM's `--master-addr:--master-port`, where
torch's TCPStore waits for every rank). The head then waits for ranks that never come, its log
says nothing new, and only a connection from the worker's own node shows why (a firewall on the
head, a control route through the wrong interface)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

from sparkrig import defaults
from sparkrig.engines.launch_spec import ProcessSpec
from sparkrig.errors import ExecutorError
from sparkrig.fabric.runner import CommandRunner
from sparkrig.launch.cluster_plan import LaunchPlan
from sparkrig.launch.node_executors import node_python
from sparkrig.outside_numbers import int_or_none

# stdlib only: the node's python3 may hold nothing of sparkrig
_CONNECT = (
    "import socket, sys\n"
    "try:\n"
    "    socket.create_connection((sys.argv[1], int(sys.argv[2])), float(sys.argv[3])).close()\n"
    "except TimeoutError:\n"
    "    print('timed out')\n"
    "    sys.exit(1)\n"
    "except OSError as exc:\n"
    "    print(exc.strerror or type(exc).__name__)\n"
    "    sys.exit(1)\n"
)


def rendezvous_of(processes: Sequence[ProcessSpec]) -> tuple[str, int] | None:
    """The head's `--master-addr` and `--master-port` its headless workers connect to."""
    for process in processes:
        argv = process.argv
        if "--headless" not in argv or "--master-addr" not in argv:
            continue
        try:
            address = argv[argv.index("--master-addr") + 1]
            port = int_or_none(argv[argv.index("--master-port") + 1], minimum=1, maximum=65535)
        except (IndexError, ValueError):
            return None
        return (address, port) if port is not None else None
    return None


async def rendezvous_cut_off(plan: LaunchPlan, runners: Mapping[str, CommandRunner]) -> str | None:
    """`node b cannot connect to the head's rendezvous …`, from the first worker node whose
    connection fails; None when every worker connects (or the plan has no rendezvous)."""
    found = rendezvous_of(plan.processes)
    if found is None:
        return None
    address, port = found
    workers = sorted({p.node for p in plan.processes if "--headless" in p.argv})
    limit = defaults.RENDEZVOUS_CONNECT_TIMEOUT_S
    for node in workers:
        python = node_python(plan.access_of(node).executor)
        argv = [python, "-c", _CONNECT, address, str(port), f"{limit:g}"]
        try:
            result = await asyncio.to_thread(runners[node].run, argv, timeout=limit + 10)
        except ExecutorError:
            continue  # the node itself is gone: the liveness watch names that
        if result.ok:
            continue
        why = result.stdout.strip() or result.error_line
        return (
            f"node {node} cannot connect to the head's rendezvous {address}:{port} ({why}): "
            f"its ranks never meet the head's — open TCP port {port} on {plan.head} to the "
            f"other nodes (its firewall: `iptables -S INPUT`, `nft list ruleset`), or check "
            f"the route from {node} (`ip route get {address}`)"
        )
    return None
