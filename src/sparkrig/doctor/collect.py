"""The I/O shell: run every probe once per node through its executor and keep the raw text.

Nothing here judges; `sparkrig.doctor.checks` reads what this returns. Nodes are collected in
parallel (threads: the executors are blocking subprocess calls).
"""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor

from sparkrig import defaults
from sparkrig.doctor.container_info import runtime_info
from sparkrig.doctor.model import NodeCapture, ToolOutput
from sparkrig.doctor.probes import (
    Probe,
    container_probes,
    container_store_probe,
    engine_python_probe,
    ethtool_probe,
    image_python_probe,
    node_files_probe,
    node_probes,
    sparkrig_python_probe,
    unit_show_probe,
)
from sparkrig.errors import ExecutorError
from sparkrig.fabric.runner import CommandRunner

Clock = Callable[[], float]


def _missing(result_rc: int, stderr: str) -> bool:
    # 127: the shell (ssh) found no such command; ip netns exec prints `exec of "x" failed`
    return result_rc == 127 or ("exec of" in stderr and "No such file" in stderr)


def run_probe(runner: CommandRunner, probe: Probe, clock: Clock = time.time) -> ToolOutput:
    """Raises ExecutorError only when the node itself cannot be reached."""
    command = shlex.join(probe.argv)
    started = clock()
    try:
        result = runner.run(probe.argv, timeout=defaults.DOCTOR_PROBE_TIMEOUT_S)
    except ExecutorError as exc:
        if "not installed" in str(exc):
            return ToolOutput(
                command=command,
                returncode=-1,
                skipped=f"{probe.tool} is not installed — {probe.install}",
            )
        if "ran past" in str(exc):
            return ToolOutput(command=command, returncode=-1, skipped=str(exc))
        raise
    finished = clock()
    if _missing(result.returncode, result.stderr):
        return ToolOutput(
            command=command,
            returncode=result.returncode,
            stderr=result.stderr,
            skipped=f"{probe.tool} is not installed — {probe.install}",
        )
    skipped = None
    if not result.ok and not result.stdout.strip():
        skipped = f"`{command}` failed: {result.error_line} — run it by hand on the node"
    return ToolOutput(
        command=command,
        returncode=result.returncode,
        stdout=result.stdout,
        stderr=result.stderr,
        skipped=skipped,
        started_at=started,
        finished_at=finished,
    )


def _netdevs(ip_link: str | None) -> list[str]:
    try:
        links = json.loads(ip_link or "[]")
        return [
            str(link["ifname"])
            for link in links
            if link.get("link_type") == "ether" and not str(link["ifname"]).startswith("veth")
        ]
    except (ValueError, TypeError, KeyError):
        return []


def _engine_units(listing: str | None) -> list[str]:
    units = []
    for line in (listing or "").splitlines():
        unit = line.split(maxsplit=1)[0] if line.strip() else ""
        if unit.endswith(".service") and any(
            pattern in unit for pattern in defaults.DOCTOR_ENGINE_UNIT_PATTERNS
        ):
            units.append(unit)
    return units


def _container_store(runner: CommandRunner, outputs: dict[str, ToolOutput]) -> None:
    """findmnt of the image store the runtime's `info` names (none when it did not answer)."""
    root = runtime_info(outputs["container_info"].stdout).store_root
    if root.startswith("/"):
        probe = container_store_probe(root)
        outputs[probe.name] = run_probe(runner, probe)


def _engine_probes(
    engine_python: str | None,
    container_runtime: str | None,
    container_image: tuple[str, list[str]] | None,
) -> list[Probe]:
    """The runtime's probes for a contained engine, and the engine's packages: inside its
    image when it runs from one, else in the venv beside its command on the host."""
    probes = container_probes(container_runtime) if container_runtime is not None else []
    if engine_python is not None and container_runtime is not None and container_image:
        image, runtime_args = container_image
        probes.append(image_python_probe(container_runtime, runtime_args, image, engine_python))
    elif engine_python is not None:
        probes.append(engine_python_probe(engine_python))
    return probes


def collect_node(
    node: str,
    runner: CommandRunner,
    *,
    model_dir: str,
    jit_dir: str,
    engine_version: list[str] | None = None,
    interfaces: list[str] | None = None,
    engine_python: str | None = None,
    container_runtime: str | None = None,
    container_image: tuple[str, list[str]] | None = None,
    files: list[str] | None = None,
    python: str | None = None,
) -> NodeCapture:
    """`interfaces`: netdevs to run ethtool on (default: every Ethernet device the node has);
    `container_runtime`: docker or podman when the engine runs from an image;
    `container_image`: that image and the runtime's options before `run` (the engine's
    packages are then listed inside the image, not in a host venv);
    `files`: paths the plan puts on the node for its ranks (the NCCL graph XML);
    `python`: the node's Python that runs sparkrig's own steps there (its probe, fabric test)."""
    outputs: dict[str, ToolOutput] = {}
    probes = node_probes(model_dir, jit_dir, engine_version)
    probes += _engine_probes(engine_python, container_runtime, container_image)
    if files:
        probes.append(node_files_probe(files))
    if python is not None:
        probes.append(sparkrig_python_probe(python))
    try:
        for probe in probes:
            outputs[probe.name] = run_probe(runner, probe)
        ip_link = outputs["ip_link"]
        targets = interfaces if interfaces is not None else _netdevs(ip_link.stdout)
        present = set(_netdevs(ip_link.stdout)) if ip_link.skipped is None else set()
        for netdev in targets:
            if netdev in present:
                probe = ethtool_probe(netdev)
                outputs[probe.name] = run_probe(runner, probe)
                if outputs[probe.name].skipped and "not installed" in str(
                    outputs[probe.name].skipped
                ):
                    break  # one skipped line, not one per interface
        units = _engine_units(outputs["systemd_units"].stdout)
        if units and outputs["systemd_units"].skipped is None:
            outputs["systemd_show"] = run_probe(runner, unit_show_probe(units))
        if container_runtime is not None:
            _container_store(runner, outputs)
    except ExecutorError as exc:
        if not outputs:
            return NodeCapture(node=node, reached_by=runner.description, unreachable=str(exc))
        # the node stopped answering part way: what did not run says why, once per probe
        for probe in probes:
            if probe.name not in outputs:
                outputs[probe.name] = ToolOutput(
                    command=shlex.join(probe.argv),
                    returncode=-1,
                    skipped=f"the node stopped answering: {exc}",
                )
    return NodeCapture(node=node, reached_by=runner.description, outputs=outputs)


def collect_all(
    runners: Mapping[str, CommandRunner],
    *,
    model_dir: str,
    jit_dir: str,
    engine_version: list[str] | None = None,
    interfaces: Mapping[str, list[str]] | None = None,
    engine_python: str | None = None,
    container_runtime: str | None = None,
    container_image: tuple[str, list[str]] | None = None,
    files: Mapping[str, list[str]] | None = None,
    pythons: Mapping[str, str] | None = None,
) -> dict[str, NodeCapture]:
    with ThreadPoolExecutor(max_workers=max(1, len(runners))) as pool:
        futures = {
            node: pool.submit(
                collect_node,
                node,
                runner,
                model_dir=model_dir,
                jit_dir=jit_dir,
                engine_version=engine_version,
                interfaces=(interfaces or {}).get(node),
                engine_python=engine_python,
                container_runtime=container_runtime,
                container_image=container_image,
                files=(files or {}).get(node),
                python=(pythons or {}).get(node),
            )
            for node, runner in runners.items()
        }
        return {node: future.result() for node, future in futures.items()}
