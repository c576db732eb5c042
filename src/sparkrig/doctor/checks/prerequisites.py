"""What each node needs for the steps sparkrig runs there, before any of them fails half-way:
root for the fabric steps, and a Python with sparkrig (and torch, for `fabric test`) for the
steps that run sparkrig's own code on the node. How each node is reached (ssh in batch mode)
is judged before every check: a node no command reaches is `node-reachable`."""

from __future__ import annotations

import json

from sparkrig import __version__
from sparkrig.doctor.model import NodeCapture
from sparkrig.doctor.registry import Hit, NodeContext, node_check
from sparkrig.outside_numbers import int_or_none

SOURCE = "docs/doctor.md#what-each-node-needs"


def _has_fabric(context: NodeContext) -> bool:
    return context.plan is not None


@node_check(
    "node-privilege",
    summary="the user sparkrig reaches the node as may run the fabric steps there",
    why="`fabric discover`, `fabric apply` and `--restore` add addresses and routes, set sysctls "
    "and write the NCCL graph under /etc/sparkrig: as another user every one of them is refused "
    "part way through the plan",
    source=SOURCE,
    needs=("logind",),
    applies=_has_fabric,
)
def node_privilege(capture: NodeCapture, context: NodeContext) -> list[Hit]:
    words = (capture.text("logind") or "").split("\n", 1)[0].split()
    if len(words) < 3 or words[0] != "user":
        return []
    name, uid = words[1], int_or_none(words[2], minimum=0)
    if uid is None or uid == 0:
        return []
    return [
        Hit(
            "warning",
            f"reached as {name} (uid {uid}), not root: the fabric steps would be refused here "
            "(`up`, `sync`, `check` and `bench` need no root)",
            f'reach the node as root for the fabric steps: `ssh = "root@HOST"` on node '
            f"{context.node} (or a root alias in the executor's ssh_config), or run `sparkrig "
            "fabric apply` on the node itself as root",
        )
    ]


@node_check(
    "node-sparkrig",
    summary="the node's Python has sparkrig, the same release as here, and torch",
    why="`fabric discover` runs sparkrig's probe on every node and `fabric test` its workers "
    "(torch.distributed) with the Python the cluster file's [executor] names (python3 on "
    "an ssh node's PATH by default); a missing or other release stops them on that node",
    source=SOURCE,
    needs=("sparkrig_python",),
    applies=_has_fabric,
)
def node_sparkrig(capture: NodeCapture, context: NodeContext) -> list[Hit]:
    try:
        found = json.loads((capture.text("sparkrig_python") or "").strip().splitlines()[-1])
    except (ValueError, IndexError):
        return []
    if not isinstance(found, dict):
        return []
    python = str(found.get("path") or "python3")
    where = '[executor] python = "/path/to/python" (the node\'s venv with sparkrig)'
    if found.get("missing") is True:
        return [
            Hit(
                "error",
                f"{python} is not on node {context.node}",
                f"install sparkrig there (`pipx install sparkrig` or a venv), or name its "
                f"Python in the cluster file: {where}",
            )
        ]
    hits = []
    theirs, torch = found.get("sparkrig"), found.get("torch")
    if not isinstance(theirs, str):
        hits.append(
            Hit(
                "error",
                f"{python} on node {context.node} has no sparkrig: `fabric discover` and "
                "`fabric test` cannot run there",
                f"`{python} -m pip install sparkrig=={__version__}` on the node, or name the "
                f"Python that has it: {where}",
            )
        )
    elif theirs != __version__:
        hits.append(
            Hit(
                "warning",
                f"sparkrig {theirs} on node {context.node}, {__version__} here: the probe's "
                "and the workers' arguments may differ",
                f"install the same release on every node: `{python} -m pip install "
                f"sparkrig=={__version__}`",
            )
        )
    if not isinstance(torch, str):
        hits.append(
            Hit(
                "warning",
                f"{python} on node {context.node} has no torch: `fabric test` cannot start "
                "its worker there",
                f"`{python} -m pip install torch`, or name the engine's venv Python, which has "
                f"it: {where}",
            )
        )
    return hits
