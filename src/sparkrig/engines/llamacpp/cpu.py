"""What this CPU offers, as far as a native llama.cpp build depends on it.

A native build (`GGML_NATIVE=ON`) compiles for the instructions the build machine's CPU
advertises; the same binary on a CPU without them dies by SIGILL. So the build cache is keyed by
the machine's architecture and CPU feature flags: a home folder shared between machines with
different CPUs rebuilds instead of crashing.
"""

from __future__ import annotations

import hashlib
import platform
from pathlib import Path

CPUINFO = Path("/proc/cpuinfo")
# x86 lists its features as `flags`, arm64 as `Features`
_FEATURE_KEYS = ("flags", "features")
# The features whose presence or absence decides which kernels ggml-cpu compiles or runs.
NOTABLE_FEATURES = (
    "avx",
    "avx2",
    "fma",
    "f16c",
    "bmi2",
    "avx_vnni",
    "avx512f",
    "avx512bw",
    "avx512vl",
    "avx512_vnni",
    "avx512_bf16",
    "avx512vbmi",
    "amx_tile",
    "amx_int8",
    "amx_bf16",
    "asimd",
    "asimddp",
    "sve",
    "sve2",
    "i8mm",
    "bf16",
)


def cpuinfo_text(path: Path = CPUINFO) -> str:
    """/proc/cpuinfo, or "" where it cannot be read (another OS, a sandbox)."""
    try:
        return path.read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return ""


def cpu_features(text: str) -> frozenset[str]:
    """The feature flags of the first processor listed in a /proc/cpuinfo text."""
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip().lower() in _FEATURE_KEYS:
            return frozenset(value.split())
    return frozenset()


def cpu_model_name(text: str) -> str:
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip().lower() in {"model name", "cpu model", "hardware"}:
            return " ".join(value.split())
    return platform.processor() or "unknown CPU"


def native_build_key(text: str, machine: str | None = None) -> str:
    """Names the CPU a native build is for: architecture plus a hash of every feature flag."""
    arch = machine or platform.machine() or "unknown"
    features = "\n".join(sorted(cpu_features(text)))
    return f"{arch}-{hashlib.sha256(features.encode()).hexdigest()[:8]}"


def notable_features(text: str) -> list[str]:
    present = cpu_features(text)
    return [name for name in NOTABLE_FEATURES if name in present]
