"""What the serving user's session and limits do to a multi-node engine: systemd-logind's
RemoveIPC deleting a worker's semaphores when the ssh session that started it ends, and the
locked-memory limit and /dev/infiniband devices RDMA needs. Both from the launchers' trackers
(the failures the log signatures `ipc-removed-at-logout` and `ib-qp-connect-timeout` name)."""

from __future__ import annotations

from sparkrig.doctor.checks.rdma import rdma_ports
from sparkrig.doctor.model import NodeCapture
from sparkrig.doctor.registry import Hit, NodeContext, node_check
from sparkrig.outside_numbers import int_or_none

# the first uid logind treats as a regular user (system users and root keep their IPC objects)
_FIRST_REGULAR_UID = 1000
_NO = {"no", "false", "0", "off"}


def _fields(text: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, _, value = line.strip().partition(" ")
        if key in {"user", "linger", "memlock", "devices"}:
            fields[key] = value.strip()
        elif line.strip().startswith("RemoveIPC="):
            fields["RemoveIPC"] = line.strip().split("=", 1)[1].strip()  # the last one wins
    return fields


@node_check(
    "logind-remove-ipc",
    summary="logind keeps the serving user's IPC objects when its ssh session ends",
    why="with RemoveIPC=yes (systemd's default) and no lingering, logind deletes a regular user's "
    "semaphores and shared memory at its last logout: a worker started over ssh fails attaching "
    "to them and the head blocks forever",
    source="https://github.com/eugr/spark-vllm-docker/issues/352",
    needs=("logind",),
)
def logind_remove_ipc(capture: NodeCapture, context: NodeContext) -> list[Hit]:
    fields = _fields(capture.text("logind") or "")
    name, _, uid_text = fields.get("user", "? -1").partition(" ")
    uid = int_or_none(uid_text, minimum=0)
    remove = fields.get("RemoveIPC", "yes").lower() not in _NO
    lingering = fields.get("linger", "no") == "yes"
    if uid is None or uid < _FIRST_REGULAR_UID or not remove or lingering:
        return []
    return [
        Hit(
            "warning",
            f"user {name} (uid {uid}): RemoveIPC={fields.get('RemoveIPC', 'yes (default)')}, "
            "lingering off",
            f"`sudo loginctl enable-linger {name}`, or set RemoveIPC=no in "
            "/etc/systemd/logind.conf and `sudo systemctl restart systemd-logind`",
        )
    ]


@node_check(
    "rdma-user-limits",
    summary="the serving user can open the RDMA devices and lock the memory NCCL registers",
    why="NCCL's IB/RoCE transport opens /dev/infiniband/uverbs* and pins its buffers; without the "
    "devices it falls back to sockets or fails, and a small memlock limit fails registration",
    source="https://github.com/eugr/spark-vllm-docker/issues/335",
    needs=("rdma_limits", "ib_sysfs"),
    needs_plan=True,
)
def rdma_user_limits(capture: NodeCapture, context: NodeContext) -> list[Hit]:
    planned = context.node_plan is not None and any(
        interface.rdma for interface in context.node_plan.interfaces
    )
    if not planned or not rdma_ports(capture.text("ib_sysfs") or ""):
        return []  # no RDMA planned, or none on the node at all: rdma-devices says so
    fields = _fields(capture.text("rdma_limits") or "")
    hits = []
    devices = fields.get("devices", "").split()
    if not any(device.startswith("uverbs") for device in devices):
        hits.append(
            Hit(
                "error",
                f"/dev/infiniband holds {' '.join(devices) or 'nothing'}: no uverbs device",
                "load the RDMA modules (`sudo modprobe ib_uverbs mlx5_ib`); in a container pass "
                "`--device=/dev/infiniband`",
            )
        )
    memlock = fields.get("memlock", "")
    if memlock != "unlimited":
        hits.append(
            Hit(
                "warning",
                f"locked-memory limit {memlock or '?'} KiB (ulimit -l)",
                "raise it to unlimited for the serving user (`memlock unlimited` in "
                "/etc/security/limits.d/, LimitMEMLOCK=infinity in a unit, `--ulimit "
                "memlock=-1` for a container)",
            )
        )
    return hits
