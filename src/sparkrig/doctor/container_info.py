"""Readers of what a node's container runtime says about itself: `RUNTIME info --format json`
as the `container_info` probe prints it (the runtime's stdout, then `sparkrig-exit N`), and the
`container_gpu` probe's lines. Field types are the runtime's, so none is trusted: a field of the
wrong type reads as absent."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Final

from sparkrig.outside_numbers import int_or_none

EXIT_MARK: Final = "sparkrig-exit "


@dataclass(frozen=True)
class RuntimeInfo:
    """What `info` answered: its exit status and, where the daemon answered, its facts."""

    exit_code: int | None
    """None: the probe's last line was not `sparkrig-exit N` (cut short)"""
    version: str = ""
    store_root: str = ""
    """podman's store.graphRoot, docker's DockerRootDir: where images live"""
    runtimes: frozenset[str] = field(default_factory=frozenset)
    """docker's Runtimes (nvidia when the NVIDIA container toolkit is configured)"""

    @property
    def answered(self) -> bool:
        return self.exit_code == 0


def _object(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: object) -> str:
    return value.strip() if isinstance(value, str) else ""


def _document(text: str) -> dict[str, Any]:
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError:
        return {}  # no daemon, or a runtime too old for `--format json`: no facts
    return _object(parsed)


def runtime_info(stdout: str) -> RuntimeInfo:
    body, _, last = stdout.rstrip("\n").rpartition("\n")
    if not last.startswith(EXIT_MARK):
        body, last = stdout, ""
    code = int_or_none(last.removeprefix(EXIT_MARK).strip(), minimum=0) if last else None
    data = _document(body)
    if "store" in data or "version" in data:  # podman
        version = _text(_object(data.get("version")).get("Version"))
        root = _text(_object(data.get("store")).get("graphRoot"))
        return RuntimeInfo(code, version, root)
    runtimes = frozenset(name for name in _object(data.get("Runtimes")) if isinstance(name, str))
    return RuntimeInfo(
        code, _text(data.get("ServerVersion")), _text(data.get("DockerRootDir")), runtimes
    )


@dataclass(frozen=True)
class GpuSupport:
    """The `container_gpu` probe: nvidia-ctk's path, and the CDI specs naming nvidia.com/gpu."""

    nvidia_ctk: str = ""
    cdi_specs: tuple[str, ...] = ()


def gpu_support(stdout: str) -> GpuSupport:
    ctk = ""
    specs = []
    for line in stdout.splitlines():
        kind, _, value = line.partition(" ")
        if kind == "nvidia-ctk" and value.strip().startswith("/"):
            ctk = value.strip()
        elif kind == "cdi" and value.strip().startswith("/"):
            specs.append(value.strip())
    return GpuSupport(ctk, tuple(specs))
