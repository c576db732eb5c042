"""A node's part of the plan as host changes: MTU, link up, addresses, routes, forwarding, and
the files its ranks read (the NCCL graph XML).

One list feeds both the rendered `ip` script and `fabric apply`, so what is printed is what
runs. Each step knows how to read the state it changes, so the journal can undo exactly.
"""

from __future__ import annotations

import hashlib
import posixpath
from typing import Literal

from sparkrig.fabric.plan_model import FabricPlan
from sparkrig.frozen_model import FrozenModel

FORWARDING_SYSCTL = "net.ipv4.ip_forward"
KERNEL_DEFAULT_MTU = 1500
# Linux's MAX_ARG_STRLEN: the longest single argument exec takes (ssh passes the whole command
# as one); a file's content travels in argv, since the executors take no stdin
ARGUMENT_MAX_BYTES = 131072
# written beside the target, then renamed over it: a rank never reads half a file
_WRITE = 'mkdir -p "$1" && printf %s "$2" > "$3.sparkrig-tmp" && mv "$3.sparkrig-tmp" "$3"'
_WRITE_BASE64 = (
    'mkdir -p "$1" && printf %s "$2" | base64 -d > "$3.sparkrig-tmp" && mv "$3.sparkrig-tmp" "$3"'
)
# `present` and the bytes as base64 (exact for any content), or `absent`
_READ = 'if [ -e "$1" ]; then echo present && base64 < "$1"; else echo absent; fi'


class Step(FrozenModel):
    node: str
    kind: Literal["mtu", "link-up", "address", "route", "sysctl", "file"]
    target: str
    """the interface, address, route destination, sysctl key or file path the step changes"""
    value: str
    """the MTU, `up`, the CIDR, the route spec, the sysctl value, or a file's size and sha256"""
    apply: list[str]
    undo: list[str]
    """the undo when the state before was the kernel's default, no file (the rendered undo
    script); `fabric apply` journals the undo for the state it actually found"""
    content: str | None = None
    """the text a file step writes"""

    @property
    def shown(self) -> str:
        """The step in one line: its command, or for a file its path, size and digest (the
        content is in the rendered script, not on the terminal)."""
        if self.kind == "file":
            return f"write {self.target} ({self.value})"
        return " ".join(self.apply)


def describe_bytes(data: bytes) -> str:
    """`2,345 bytes, sha256 0123456789ab…`"""
    return f"{len(data):,} bytes, sha256 {hashlib.sha256(data).hexdigest()[:12]}…"


def write_file_argv(path: str, content: str) -> list[str]:
    return ["sh", "-c", _WRITE, "sh", posixpath.dirname(path), content, path]


def write_back_argv(path: str, encoded: str) -> list[str]:
    """Writes back bytes read as base64 (`read_file_argv`), exactly as they were."""
    return ["sh", "-c", _WRITE_BASE64, "sh", posixpath.dirname(path), encoded, path]


def read_file_argv(path: str) -> list[str]:
    return ["sh", "-c", _READ, "sh", path]


def file_step(node: str, path: str, content: str) -> Step:
    return Step(
        node=node,
        kind="file",
        target=path,
        value=describe_bytes(content.encode()),
        apply=write_file_argv(path, content),
        undo=["rm", "-f", path],
        content=content,
    )


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
    steps += [file_step(node, path, text) for path, text in node_plan.node_files.items()]
    return steps
