"""Which wheels the vLLM test bed carries: the lock, how it is made, and how it is checked.

The GPU host's own packages (host-packages.txt) stay as they are: the carried wheels go on
PYTHONPATH in front of them, so carrying a second version of anything the host has would shadow
it. carry.txt names what is carried; `relock` asks pip for versions that fit vLLM's specifiers
and the host's versions at once, for CPython 3.12 on manylinux x86-64, and writes wheels.lock.

Where vLLM (or a carried wheel) asks for another version of something the host has, the host's
stays (KEEP_HOST says why for each), and `requirement_gaps` shows every such gap.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

HERE = Path(__file__).resolve().parent
LOCK = HERE / "wheels.lock"
CARRY = HERE / "carry.txt"
HOST_PACKAGES = HERE / "host-packages.txt"

VLLM_VERSION = "0.26.0"
# the GPU host: CPython 3.12.3 on glibc 2.39 (host-packages.txt says how it was read)
PYTHON_VERSION = "3.12"
HOST_GLIBC_MINOR = 39
TARGET_MARKERS = {
    "implementation_name": "cpython",
    "implementation_version": "3.12.3",
    "os_name": "posix",
    "platform_machine": "x86_64",
    "platform_python_implementation": "CPython",
    "platform_release": "",
    "platform_version": "",
    "platform_system": "Linux",
    "python_full_version": "3.12.3",
    "python_version": "3.12",
    "sys_platform": "linux",
}
# Pins that the host's version wins over, each measured: vLLM 0.26.0 served on the host with these.
KEEP_HOST = {
    "numba": "vLLM pins 0.65.0, which needs numpy<2.5; the host's 0.68 served",
    "llvmlite": "follows numba",
    "numpy": "mistral-common caps it below 2.4 and numba 0.65 below 2.5; the host's 2.5.2 served",
    "setuptools": "vLLM asks for <81; the host's 81 served",
}


@dataclass(frozen=True)
class Locked:
    name: str
    version: str
    sha256: str

    def line(self) -> str:
        return f"{self.name}=={self.version} --hash=sha256:{self.sha256}"


def platform_args() -> list[str]:
    """pip's flags for wheels the host can load: each manylinux tag up to its glibc."""
    tags = [f"manylinux_2_{minor}_x86_64" for minor in range(HOST_GLIBC_MINOR, 4, -1)]
    tags += ["manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64"]
    args = ["--only-binary=:all:", "--implementation", "cp", "--python-version", PYTHON_VERSION]
    for tag in tags:
        args += ["--platform", tag]
    return args


def read_names(path: Path) -> list[str]:
    words = []
    for line in path.read_text().splitlines():
        words += line.split("#", 1)[0].split()
    return [str(canonicalize_name(word)) for word in words]


def read_host(path: Path) -> dict[str, str]:
    host: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if "==" in line and not line.startswith("#"):
            name, version = line.strip().split("==", 1)
            host[str(canonicalize_name(name))] = version
    return host


def read_lock(path: Path) -> list[Locked]:
    entries = []
    for line in path.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        pin, hash_flag = line.split(" --hash=sha256:")
        name, version = pin.split("==")
        entries.append(Locked(str(canonicalize_name(name)), version, hash_flag.strip()))
    return entries


def runtime_requirements(requires_dist: list[str]) -> list[Requirement]:
    """The requirements that hold on the host without extras."""
    kept = []
    for text in requires_dist:
        req = Requirement(text)
        if req.marker is None or req.marker.evaluate({**TARGET_MARKERS, "extra": ""}):
            kept.append(req)
    return kept


def wheel_requires(wheel: Path) -> tuple[str, list[str]]:
    """A wheel's distribution name and its Requires-Dist lines."""
    with zipfile.ZipFile(wheel) as archive:
        meta = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        text = archive.read(meta).decode()
    name, requires = "", []
    for line in text.split("\n\n", 1)[0].splitlines():
        if line.startswith("Name:"):
            name = canonicalize_name(line.split(":", 1)[1].strip())
        elif line.startswith("Requires-Dist:"):
            requires.append(line.split(":", 1)[1].strip())
    return name, requires


def requirement_gaps(
    requires: dict[str, list[str]], carried: dict[str, str], host: dict[str, str]
) -> list[tuple[str, Requirement, str | None]]:
    """Each (package, requirement, version present or None) that neither carried nor host meets."""
    gaps = []
    for package, lines in sorted(requires.items()):
        for req in runtime_requirements(lines):
            name = canonicalize_name(req.name)
            present = carried.get(name) or host.get(name)
            if present is None or not req.specifier.contains(present, prereleases=True):
                gaps.append((package, req, present))
    return gaps


def _pip_installs(args: list[str]) -> list[dict[str, Any]]:
    """What `pip install --dry-run --report` would install for the host (pip's JSON)."""
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "report.json"
        command = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed"]
        command += ["--quiet", "--report", str(report), "--target", str(Path(scratch) / "t")]
        subprocess.run(command + platform_args() + args, check=True)
        installs: list[dict[str, Any]] = json.loads(report.read_text())["install"]
        return installs


def relock() -> list[Locked]:
    """Resolve carry.txt against vLLM's specifiers and the host; write wheels.lock."""
    host = read_host(HOST_PACKAGES)
    wanted = read_names(CARRY)
    (vllm,) = _pip_installs(["--no-deps", f"vllm=={VLLM_VERSION}"])
    vllm_specs = {
        str(canonicalize_name(req.name)): str(req.specifier)
        for req in runtime_requirements(vllm["metadata"]["requires_dist"])
    }
    requirements = [name + vllm_specs.get(name, "") for name in wanted]
    with tempfile.NamedTemporaryFile("w", suffix=".txt") as constraints:
        constraints.write(
            "".join(f"{n}=={v}\n" for n, v in sorted(host.items()) if n not in KEEP_HOST)
        )
        constraints.flush()
        installs = _pip_installs(["-c", constraints.name, *requirements])
    locked = [_locked(vllm)]
    locked += [item for item in map(_locked, installs) if item.name not in host]
    pulled = sorted({entry.name for entry in locked[1:]} - set(wanted))
    if pulled:
        print(f"locked beyond carry.txt (their dependencies the host lacks): {', '.join(pulled)}")
    header = (
        "# Written by `benchmarks/vllm_gpu/prepare.py --relock` from carry.txt and"
        " host-packages.txt:\n# vLLM, then every wheel it carries, for CPython 3.12"
        " manylinux x86-64.\n# prepare.py downloads exactly these.\n"
    )
    LOCK.write_text(header + "".join(entry.line() + "\n" for entry in locked))
    return locked


def _locked(item: dict[str, Any]) -> Locked:
    name = str(canonicalize_name(item["metadata"]["name"]))
    sha256 = item["download_info"]["archive_info"]["hashes"]["sha256"]
    return Locked(name, item["metadata"]["version"], sha256)
