"""Ray placement when vLLM runs on Ray (engine.backend ray): the address vLLM's driver anchors
its placement group to must be an address Ray knows a node by.

What vLLM does, read in its source (vllm-project/vllm main; the files name no release):
- `vllm/v1/executor/ray_utils.py` `initialize_ray_cluster` (commit 0057add1b03e): without a
  placement group of its own it asks Ray for one bundle `{GPU: 1}` per rank with strategy
  `PACK`, and pins the first to the driver's node with `placement_group_specs[0]
  [f"node:{get_ip()}"] = 0.001`; `_wait_until_pg_ready` then waits, logging "Waiting for
  creating a placement group of specs for N seconds … make sure the IP addresses used by ray
  cluster are the same as VLLM_HOST_IP environment variable specified in each node", and gives
  up after `PG_WAIT_TIMEOUT = 1800` s.
- `vllm/utils/network_utils.py` `get_ip` (commit 0c175ae9295b): VLLM_HOST_IP when set and not
  empty, else the source address of a UDP socket connected to 8.8.8.8 (the kernel's route
  source, which `ip route get 8.8.8.8` prints), else IPv6, else 0.0.0.0.
- `vllm/v1/executor/ray_executor.py` `_init_workers_ray` (commit 016b964ce5b6): VLLM_HOST_IP is
  one of the `WORKER_SPECIFIC_ENV_VARS` not copied from the driver, so each Ray worker reports
  its node's own; when fewer distinct addresses than nodes come back it raises "Every node
  should have a unique IP address … If you set `VLLM_HOST_IP` environment variable, make sure
  it is unique for each node."

Ray names each node's `node:<ip>` resource after `ray start --node-ip-address`, which `up`
renders from the node's control address (`engines/vllm/launch.py`). So on the head, get_ip()
different from its --node-ip-address is a placement group no node can hold: start-up waits
(eugr/spark-vllm-docker#227, a multi-NIC Spark whose route left by the Ethernet port while Ray
was on the fabric). On a worker the same difference is what vLLM's message asks to avoid, and
an error when it repeats another node's address.
"""

from __future__ import annotations

from sparkrig import defaults
from sparkrig.doctor.model import NodeCapture
from sparkrig.doctor.parse import route_source
from sparkrig.doctor.registry import Hit, NodeContext, node_check

_ROUTE = f"the source of its route to {defaults.DOCTOR_VLLM_GET_IP_TARGET}"


def _on_vllm(context: NodeContext) -> bool:
    return context.engine_backend is not None


def _not_judged(context: NodeContext) -> str | None:
    if context.engine_backend != "ray":
        return (
            f"engine.backend is {context.engine_backend}: vLLM makes no Ray placement group "
            "— this check is for engine.backend ray"
        )
    return context.ray_unplanned if context.ray is None else None


def _get_ip(capture: NodeCapture, host_ip: str | None) -> tuple[str | None, str]:
    """What vLLM's get_ip() answers on the node, and where it comes from."""
    if host_ip is not None:
        return host_ip, "VLLM_HOST_IP"
    source = route_source(capture.text("route_get") or "")
    if source is None:
        return None, f"VLLM_HOST_IP unset and no IPv4 route to {defaults.DOCTOR_VLLM_GET_IP_TARGET}"
    return source, f"VLLM_HOST_IP unset, so {_ROUTE}"


@node_check(
    "ray-node-address",
    summary="vLLM's address on each node (VLLM_HOST_IP, else the route source) is the address "
    "`ray start --node-ip-address` gives Ray",
    why="vLLM's Ray executor asks for a PACK placement group whose first bundle needs the Ray "
    "resource node:<get_ip()>; Ray names that resource after --node-ip-address, so when the "
    "two differ no node holds it and start-up waits on the placement group (up to 1800 s)",
    source="https://github.com/eugr/spark-vllm-docker/issues/227",
    needs=("route_get",),
    applies=_on_vllm,
    skip_when=_not_judged,
)
def ray_node_address(capture: NodeCapture, context: NodeContext) -> list[Hit]:
    ray = context.ray
    assert ray is not None  # _not_judged holds the check back otherwise
    address, origin = _get_ip(capture, ray.host_ip)
    if address == ray.node_ip_address:
        return []
    known = f"Ray knows the node as {ray.node_ip_address} (`ray start --node-ip-address`)"
    if ray.host_ip is None:
        align = (
            f'set `env = {{ VLLM_HOST_IP = "{ray.node_ip_address}" }}` in this node\'s '
            "[[nodes]] table"
        )
        if address is not None:
            align += f", or make {address} the node's management address if Ray should use it"
    else:
        align = (
            f'remove VLLM_HOST_IP = "{ray.host_ip}" from the cluster file\'s [env] and the '
            f"node's env (the plan sets {ray.node_ip_address}), or set it to {ray.node_ip_address}"
        )
    if address is None:
        seen = f"get_ip() has no IPv4 address ({origin}; it falls back to IPv6 or 0.0.0.0)"
    elif ray.driver:
        seen = f"the driver anchors the placement group to node:{address} ({origin})"
    else:
        seen = f"this worker reports {address} ({origin})"
    if ray.driver:
        return [Hit("error", f"{seen}; {known}", f"{align}; then `sparkrig up` again")]
    repeated = address is not None and address in ray.peer_addresses
    if repeated:
        known += "; another node has that address too, and vLLM stops: each node needs its own"
    return [Hit("error" if repeated else "warning", f"{seen}; {known}", align)]
