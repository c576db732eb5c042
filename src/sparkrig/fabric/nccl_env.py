"""Per-node NCCL / Gloo / vLLM environment. Each variable carries its reason and the field
report behind it; `docs/fabric.md` quotes the same reasons."""

from __future__ import annotations

import posixpath

from sparkrig.fabric.plan_model import EnvVar, InterfacePlan


def node_env(
    *,
    interfaces: list[InterfacePlan],
    control_address: str,
    control_interface: str,
    ring_size: int | None,
    merge_nics: bool,
    graph_file: str | None,
) -> list[EnvVar]:
    """`ring_size` is the node count when the ranks form a ring (triangle or larger)."""
    hcas = list(dict.fromkeys(i.rdma for i in interfaces))
    control = [
        EnvVar(
            name="NCCL_SOCKET_IFNAME",
            value="=" + control_interface,
            reason="bootstrap TCP on the control interface only (the Spark launchers' switchless "
            "method: TCP control, RDMA data)",
        ),
        EnvVar(
            name="GLOO_SOCKET_IFNAME",
            value=control_interface,
            reason="Gloo on the same interface; Gloo on a wrong interface hangs (sparkrun#275)",
        ),
        EnvVar(
            name="VLLM_HOST_IP",
            value=control_address,
            reason="one address per node every rank reaches; keeps a worker from binding the "
            "head's address (tonyd2wild's launcher .env)",
        ),
    ]
    if not hcas:  # a single node: no fabric to describe
        return control
    env = [
        EnvVar(
            name="NCCL_IB_HCA",
            value="=" + ",".join(hcas),
            reason="exactly this node's cable-facing RDMA devices ('=' makes NCCL match whole "
            "names); pulling every Up device in broke launchers (eugr#40)",
        ),
        *control,
        EnvVar(
            name="NCCL_IB_SUBNET_AWARE_ROUTING",
            value="1",
            reason="the sender picks the device sharing the receiver's cable subnet; without "
            "it ranks timed out in ibv_modify_qp (docs/field-notes.md#nccl-subnet-aware-routing)",
        ),
        EnvVar(
            name="NCCL_IB_MERGE_NICS",
            value="1" if merge_nics else "0",
            reason="0 keeps the two PCIe functions separate NICs so subnet-aware routing can "
            "choose (eugr, luxingcom); of the field reports only the DeepSeek reproduction names "
            "it, with 1 on a direct pair (docs/field-notes.md#merge-nics-direct-pair) — set "
            "fabric.nccl_merge_nics",
        ),
        EnvVar(
            name="NCCL_IB_DISABLE",
            value="0",
            reason="RoCE for data; NET/Socket on the fabric is the failure to look for "
            "(eugr get_env_flags, vLLM docs)",
        ),
    ]
    if ring_size is not None and ring_size >= 4:
        env.append(
            EnvVar(
                name="NCCL_ALGO",
                value="Ring",
                reason="on rings of 4+ other algorithms connect non-neighbours, which have no "
                "cable: QP timeouts (eugr ring setup; the four-node ring forced Ring: "
                "docs/field-notes.md#nccl-ring-graph)",
            )
        )
    if graph_file is not None:
        env += [
            EnvVar(
                name="NCCL_GRAPH_FILE",
                value=graph_file,
                reason="channels receive on the previous-facing port and send on the "
                "next-facing port, alternating PCIe roots (kindling; "
                "docs/field-notes.md#nccl-ring-graph); its net "
                f"dev numbers: {', '.join(f'{i}={name}' for i, name in enumerate(hcas))}",
            ),
            EnvVar(
                name="NCCL_CROSS_NIC",
                value="1",
                reason="a channel receives and sends on different NICs by design (kindling)",
            ),
            EnvVar(
                name="NCCL_IB_ADDR_FAMILY",
                value="AF_INET",
                reason="pick the IPv4-mapped RoCE v2 GID; NCCL_IB_GID_INDEX stays unset "
                "because the index differs per node and device (kindling, MiaAI #11)",
            ),
            EnvVar(
                name="NCCL_IB_ROCE_VERSION_NUM",
                value="2",
                reason="RoCE v2, routable per cable subnet (kindling, MiaAI)",
            ),
        ]
    return env


def graph_file_path(node_dir: str, node: str) -> str:
    """Where the node's ranks read their graph (`fabric.node_dir`); `fabric apply` writes it."""
    return posixpath.join(node_dir, f"nccl-graph-{node}.xml")
