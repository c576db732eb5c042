"""Nodes against each other: versions that must match, page size, clocks, SM clock ceilings."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from sparkrig import defaults
from sparkrig.doctor.checks.gpu import nvidia_smi_log
from sparkrig.doctor.model import NodeCapture
from sparkrig.doctor.parse import Unreadable, dpkg_installed, mhz
from sparkrig.doctor.registry import Hit, NodeContext, cluster_check
from sparkrig.outside_numbers import parse_float

NOTES = "docs/field-notes.md"
Captures = Mapping[str, NodeCapture]
Contexts = Mapping[str, NodeContext]


def _disagree(values: dict[str, str], what: str, fix: str) -> list[Hit]:
    """One hit when the nodes that report a value do not all report the same one."""
    if len(set(values.values())) <= 1:
        return []
    groups: dict[str, list[str]] = {}
    for node, value in values.items():
        groups.setdefault(value, []).append(node)
    listed = "; ".join(f"{', '.join(nodes)}: {value}" for value, nodes in groups.items())
    return [Hit("error", f"{what} differs — {listed}", fix)]


def _each(captures: Captures, read: Callable[[NodeCapture], str | None]) -> dict[str, str]:
    values = {}
    for name, capture in captures.items():
        value = read(capture)
        if value:
            values[name] = value
    return values


_SAME = (
    "release tests and the determinism gate hold for one combination; run the same on every node"
)


@cluster_check(
    "same-kernel",
    summary="every node runs the same kernel",
    why=_SAME,
    source=f"{NOTES} (one stack on every node)",
    needs=("uname",),
)
def same_kernel(captures: Captures, contexts: Contexts) -> list[Hit]:
    values = _each(captures, lambda c: (c.text("uname") or "").strip())
    return _disagree(
        values,
        "kernel (uname -r)",
        "install and boot the same kernel on every node (`apt install "
        "linux-image-<version>`, then reboot)",
    )


@cluster_check(
    "same-page-size",
    summary="every node uses the same memory page size",
    why=_SAME + "; the recipes are qualified on one page size (4 KiB or the 64 KiB kernel)",
    source=f"{NOTES} (one stack on every node)",
    needs=("pagesize",),
)
def same_page_size(captures: Captures, contexts: Contexts) -> list[Hit]:
    values = _each(captures, lambda c: (c.text("pagesize") or "").strip())
    return _disagree(
        values,
        "page size (getconf PAGESIZE)",
        "boot the same kernel flavour (e.g. -nvidia-64k) on every node",
    )


@cluster_check(
    "same-driver",
    summary="every node runs the same NVIDIA driver",
    why=_SAME,
    source=f"{NOTES} (driver bump)",
    needs=("nvidia_smi",),
)
def same_driver(captures: Captures, contexts: Contexts) -> list[Hit]:
    def read(capture: NodeCapture) -> str | None:
        root = nvidia_smi_log(capture.text("nvidia_smi") or "")
        return None if root is None else root.findtext("driver_version")

    return _disagree(
        _each(captures, read),
        "NVIDIA driver",
        "install the same driver on every node (`apt install "
        "nvidia-driver-<branch>=<version>`), reboot",
    )


def _packages(capture: NodeCapture, pattern: str) -> str | None:
    packages = dpkg_installed(capture.text("dpkg") or "")
    found = sorted(f"{p} {v}" for p, v in packages.items() if re.fullmatch(pattern, p))
    return ", ".join(found) or None


@cluster_check(
    "same-cuda",
    summary="every node has the same CUDA toolkit packages",
    why=_SAME + "; nvidia-smi's `CUDA Version` is the driver's maximum, not the toolkit",
    source=f"{NOTES} (driver bump)",
    needs=("dpkg",),
)
def same_cuda(captures: Captures, contexts: Contexts) -> list[Hit]:
    values = _each(captures, lambda c: _packages(c, r"cuda-(toolkit|cudart)-\d+-\d+"))
    return _disagree(values, "CUDA toolkit", "install the same cuda-toolkit-X-Y on every node")


@cluster_check(
    "same-nccl",
    summary="every node has the same NCCL",
    why=_SAME,
    source=f"{NOTES} (one stack on every node)",
    needs=("dpkg",),
)
def same_nccl(captures: Captures, contexts: Contexts) -> list[Hit]:
    values = _each(captures, lambda c: _packages(c, r"libnccl2"))
    return _disagree(
        values,
        "NCCL (libnccl2)",
        "`apt install libnccl2=<version>` with the same version on every node",
    )


@cluster_check(
    "same-engine",
    summary="every node runs the same engine version",
    why=_SAME,
    source=f"{NOTES} (one stack on every node)",
    needs=("engine_version",),
)
def same_engine(captures: Captures, contexts: Contexts) -> list[Hit]:
    values = _each(
        captures,
        lambda c: (
            (c.text("engine_version") or "").strip().splitlines()[-1]
            if (c.text("engine_version") or "").strip()
            else None
        ),
    )
    return _disagree(
        values,
        "engine version",
        "install the same engine build on every node (same wheel or image)",
    )


def _offset(capture: NodeCapture) -> tuple[float, float] | None:
    output = capture.outputs.get("clock")
    if output is None or output.started_at is None or output.finished_at is None:
        return None
    try:
        remote = parse_float(output.stdout, source="date +%s.%N", field="clock", minimum=0)
    except ValueError as exc:
        raise Unreadable(f"clock {output.stdout.strip()[:30]!r} is not seconds since 1970") from exc
    middle = (output.started_at + output.finished_at) / 2
    return remote - middle, (output.finished_at - output.started_at) / 2


@cluster_check(
    "clock-offset",
    summary="node clocks agree within half a second",
    why="readiness by liveness and log order compare timestamps across nodes; clocks apart make "
    "a live node look stalled or a stalled one live",
    source="docs/launch.md (readiness by liveness)",
    needs=("clock",),
)
def clock_offset(captures: Captures, contexts: Contexts) -> list[Hit]:
    offsets = {n: o for n, c in captures.items() if (o := _offset(c)) is not None}
    if len(offsets) < 2:
        return []
    early = min(offsets, key=lambda n: offsets[n][0])
    late = max(offsets, key=lambda n: offsets[n][0])
    spread = offsets[late][0] - offsets[early][0]
    slack = offsets[late][1] + offsets[early][1]
    if spread - slack <= defaults.DOCTOR_CLOCK_OFFSET_MAX_S:
        return []
    return [
        Hit(
            "warning",
            f"{late}'s clock is {spread:.2f} s ahead of {early}'s (±{slack:.2f} s)",
            "run chrony on every node against the same source (`apt install chrony`, "
            "`chronyc makestep`)",
        )
    ]


@cluster_check(
    "sm-clock-spread",
    summary="SM clock ceilings match across boards",
    why="low or uneven SM clocks on one board slow every step, since every rank waits for the "
    "slowest; an SM clock cap must run on every node or none",
    source=f"{NOTES} (SM clocks)",
    needs=("nvidia_smi",),
)
def sm_clock_spread(captures: Captures, contexts: Contexts) -> list[Hit]:
    ceilings: dict[str, int] = {}
    for name, capture in captures.items():
        root = nvidia_smi_log(capture.text("nvidia_smi") or "")
        gpu = root.find("gpu") if root is not None else None
        if gpu is None:
            continue
        app = mhz(gpu.findtext("applications_clocks/graphics_clock"))
        top = mhz(gpu.findtext("max_clocks/sm_clock"))
        if (ceiling := app or top) is not None:
            ceilings[name] = ceiling
    if len(ceilings) < 2 or min(ceilings.values()) >= max(ceilings.values()) * (
        1 - defaults.DOCTOR_SM_CLOCK_SPREAD
    ):
        return []
    listed = ", ".join(f"{n} {v} MHz" for n, v in ceilings.items())
    slow = min(ceilings, key=lambda n: ceilings[n])
    return [
        Hit(
            "warning",
            f"SM clock ceiling: {listed}",
            f"on {slow}: `nvidia-smi -q -d CLOCK`; remove "
            "the cap (`nvidia-smi -rgc`) or apply the same `nvidia-smi -lgc` on every node",
            node=slow,
        )
    ]


_STACK = re.compile(
    r"^(vllm|torch|triton|transformers|xformers|tilelang|flashinfer.*|deep[-_]gemm|"
    r"nvidia-nccl-cu\d+|nvidia-cudnn-cu\d+|nvidia-cublas-cu\d+|cuda-bindings|cuda-python)$"
)


def python_stack(listing: str) -> dict[str, str]:
    """The engine's kernel-library packages from `name==version` lines (pip's freeze format)."""
    packages = {}
    for line in listing.splitlines():
        name, equals, version = line.partition("==")
        if equals and _STACK.match(name.strip().lower()):
            packages[name.strip().lower()] = version.strip()
    return packages


def stack_differences(listings: Mapping[str, str]) -> list[str]:
    """`package node version, node version` for each stack package the nodes do not share."""
    stacks = {name: python_stack(listing) for name, listing in listings.items()}
    differ = []
    for package in sorted({package for stack in stacks.values() for package in stack}):
        versions = {node: stack.get(package, "absent") for node, stack in stacks.items()}
        if len(set(versions.values())) > 1:
            differ.append(f"{package} " + ", ".join(f"{n} {v}" for n, v in versions.items()))
    return differ


def _on_host(context: NodeContext) -> bool:
    return context.container_runtime is None


@cluster_check(
    "same-python-stack",
    summary="the engine's venv holds the same vLLM, torch, NCCL, FlashInfer, Triton on every node",
    why=_SAME + "; pip wheels (nvidia-nccl-cu13, flashinfer) are not dpkg packages, and two "
    "builds of one kernel library differ silently",
    source=f"{NOTES} (one stack on every node)",
    applies=_on_host,
    needs=("engine_python",),
)
def same_python_stack(captures: Captures, contexts: Contexts) -> list[Hit]:
    differ = stack_differences({n: c.text("engine_python") or "" for n, c in captures.items()})
    if not differ:
        return []
    return [
        Hit(
            "error",
            "; ".join(differ),
            "install the engine's venv from one lock file on every node (`pip install -r "
            "requirements.lock` or copy the venv), then compare `pip list --format=freeze`",
        )
    ]
