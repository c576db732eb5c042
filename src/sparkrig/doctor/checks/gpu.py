"""The GPU and its driver, from `nvidia-smi -q -x`, the loaded module and the packages."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from sparkrig.doctor.model import NodeCapture
from sparkrig.doctor.parse import dpkg_installed, sysfs_values, xml_root
from sparkrig.doctor.registry import Hit, NodeContext, node_check
from sparkrig.outside_numbers import parse_int

NOTES = "docs/field-notes.md"
_NO_XML = (
    "No devices were found",
    "couldn't communicate with the NVIDIA driver",
    "Failed to initialize NVML",
)
_SLOWDOWNS = (
    "hw_slowdown",
    "hw_thermal_slowdown",
    "hw_power_brake_slowdown",
    "sw_thermal_slowdown",
    "sw_power_cap",
)


def nvidia_smi_log(text: str) -> ET.Element | None:
    """The XML root, or None when nvidia-smi answered with one of its failure lines."""
    if any(marker in text for marker in _NO_XML):
        return None
    return xml_root(text, "`nvidia-smi -q -x` output")


def unified_memory(text: str) -> bool:
    """A GB10 (DGX Spark), or any GPU whose framebuffer total is not a size: its memory is the
    host's."""
    root = nvidia_smi_log(text)
    for gpu in [] if root is None else root.findall("gpu"):
        total = gpu.findtext("fb_memory_usage/total") or ""
        if "GB10" in (gpu.findtext("product_name") or "") or not re.match(r"^\d+ MiB$", total):
            return True
    return False


def driver_version(text: str) -> str | None:
    root = nvidia_smi_log(text)
    return None if root is None else root.findtext("driver_version")


@node_check(
    "gpu-visible",
    summary="nvidia-smi sees the GPU through the driver",
    why="a driver bump broke GB10 detection for others on this hardware; the reports pin the "
    "driver that works",
    source=f"{NOTES} (driver bump)",
    needs=("nvidia_smi",),
)
def gpu_visible(capture: NodeCapture, context: NodeContext) -> list[Hit]:
    text = capture.text("nvidia_smi") or ""
    root = nvidia_smi_log(text)
    attached = (root.findtext("attached_gpus") or "0") if root is not None else "0"
    if parse_int(attached, source="nvidia-smi -q -x", field="attached_gpus", minimum=0) > 0:
        return []
    line = text.strip().splitlines()[0] if text.strip() else "attached_gpus 0"
    return [
        Hit(
            "error",
            f"nvidia-smi: {line!r}",
            "if the driver was just changed, reboot; if it still fails, go back to the driver the "
            "other nodes run (`apt install nvidia-driver-<branch>=<version>`, the reports pin "
            "580.173.02 / 580.178.04 on GB10)",
        )
    ]


@node_check(
    "driver-module-match",
    summary="the loaded kernel module is the driver nvidia-smi reports",
    why="after a driver upgrade without a reboot the old module stays loaded; CUDA then fails "
    "with `Driver/library version mismatch` on first use",
    source=f"{NOTES} (driver bump)",
    needs=("nvidia_smi", "module_sysfs"),
)
def driver_module_match(capture: NodeCapture, context: NodeContext) -> list[Hit]:
    loaded = sysfs_values(capture.text("module_sysfs") or "").get("/sys/module/nvidia/version")
    userspace = driver_version(capture.text("nvidia_smi") or "")
    if loaded is None or userspace is None or loaded == userspace:
        return []
    return [
        Hit(
            "error",
            f"module {loaded} loaded, nvidia-smi (userspace) {userspace}",
            "reboot the node so the installed driver's module loads (`systemctl reboot`)",
        )
    ]


@node_check(
    "gpu-clock-throttle",
    summary="no thermal, power or hardware clock slowdown is active",
    why="low or uneven SM clocks on one board slow every step of every rank",
    source=f"{NOTES} (SM clocks)",
    needs=("nvidia_smi",),
)
def gpu_clock_throttle(capture: NodeCapture, context: NodeContext) -> list[Hit]:
    root = nvidia_smi_log(capture.text("nvidia_smi") or "")
    hits = []
    for gpu in [] if root is None else root.findall("gpu"):
        reasons = gpu.find("clocks_event_reasons")
        if reasons is None:  # drivers before 550 used the older name
            reasons = gpu.find("clocks_throttle_reasons")
        if reasons is None:
            continue
        active = [
            re.sub(r"^clocks_(event|throttle)_reason_", "", e.tag)
            for e in reasons
            if e.text == "Active"
        ]
        slow = [reason for reason in active if reason in _SLOWDOWNS]
        if slow:
            sm = gpu.findtext("clocks/sm_clock") or "?"
            top = gpu.findtext("max_clocks/sm_clock") or "?"
            temp = gpu.findtext("temperature/gpu_temp") or "?"
            hits.append(
                Hit(
                    "warning",
                    f"GPU {gpu.get('id')}: {', '.join(slow)} active; SM {sm} of {top}, {temp}",
                    "check airflow and the room, and any SM clock cap (`nvidia-smi -q -d "
                    "PERFORMANCE`); a cap belongs on every node alike or none",
                )
            )
    return hits


@node_check(
    "nvidia-modules-package",
    summary="an NVIDIA kernel modules package matches the running kernel",
    why="the modules package is built per kernel; one republished for another kernel leaves the "
    "running kernel without a driver at the next boot",
    source=f"{NOTES} (modules package)",
    needs=("uname", "dpkg"),
)
def nvidia_modules_package(capture: NodeCapture, context: NodeContext) -> list[Hit]:
    kernel = (capture.text("uname") or "").strip()
    packages = dpkg_installed(capture.text("dpkg") or "")
    modules = {p: v for p, v in packages.items() if p.startswith("linux-modules-nvidia-")}
    if not modules or not kernel or any(p.endswith("-" + kernel) for p in modules):
        return []  # no packaged modules (DKMS, a container): nothing to match
    listed = ", ".join(f"{p} {v}" for p, v in sorted(modules.items()))
    branch = re.match(r"linux-modules-nvidia-(\d+(?:-open)?)-", next(iter(sorted(modules))))
    name = f"linux-modules-nvidia-{branch.group(1) if branch else '<branch>'}-{kernel}"
    return [
        Hit(
            "error",
            f"kernel {kernel}; installed modules packages: {listed}",
            f"`apt install {name}` (or boot the kernel the installed package is built for)",
        )
    ]
