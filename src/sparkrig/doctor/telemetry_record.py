"""Telemetry beside a receipt: `bench-X.json` -> `bench-X.telemetry.json`, one `Telemetry` per
host (this one, and each cluster node when a cluster is given). A file of its own, so the bench
and check receipt formats are untouched."""

from __future__ import annotations

import socket
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from sparkrig import defaults
from sparkrig.doctor import node_telemetry
from sparkrig.doctor.telemetry import Sampler
from sparkrig.doctor.telemetry_model import TelemetryRecord
from sparkrig.errors import ExecutorError
from sparkrig.fabric.runner import CommandRunner
from sparkrig.json_files import read_model_file, write_atomically


def telemetry_path(receipt_path: Path) -> Path:
    return receipt_path.with_suffix(".telemetry.json")


def is_telemetry_path(path: Path) -> bool:
    return path.name.endswith(".telemetry.json")


def telemetry_beside(receipt_path: Path) -> TelemetryRecord | None:
    path = telemetry_path(receipt_path)
    if not path.exists():
        return None
    return read_model_file(
        path,
        TelemetryRecord,
        what="telemetry record",
        fix=f"move {path.name} aside (its receipt reads without it), or rerun with telemetry on",
    )


def cluster_nodes(cluster_file: Path | None, *, enabled: bool = True) -> dict[str, CommandRunner]:
    """Every node of `cluster_file`, reached through the file's `[executor]` (telemetry only
    reads, it never changes a host); none without a file, or with telemetry off."""
    if not enabled or cluster_file is None:
        return {}
    # only a run given --cluster loads these; `report` reads this module too
    from sparkrig.config import load_cluster  # noqa: PLC0415
    from sparkrig.launch.executors import reach_nodes  # noqa: PLC0415
    from sparkrig.launch.node_executors import ExecutorChoice  # noqa: PLC0415

    # bench and check have no --executor or --node: the file must name how nodes are reached
    choice = ExecutorChoice(
        no_executor_fix="give it one (ssh) to sample its nodes, or leave out --cluster"
    )
    return dict(reach_nodes(load_cluster(cluster_file), choice))


@contextmanager
def sampled_beside(
    receipt_path: Path,
    *,
    enabled: bool = True,
    nodes: Mapping[str, CommandRunner] | None = None,
    interval_s: float = defaults.TELEMETRY_INTERVAL_S,
) -> Iterator[None]:
    """Sample this host (and each of `nodes` through its executor) while the block runs; write
    the record beside the receipt, also when the block is interrupted."""
    if not enabled:
        yield
        return
    problems: list[str] = []
    started = []
    for node, runner in (nodes or {}).items():
        try:
            started.append((node_telemetry.start(node, runner, interval_s), runner))
        except ExecutorError as exc:
            problems.append(f"{node}: {exc}")
    sampler = Sampler(interval_s)
    try:
        with sampler:
            yield
    finally:
        hosts = [sampler.result(socket.gethostname())]
        for node_sampler, runner in started:
            try:
                hosts.append(node_telemetry.stop(node_sampler, runner, interval_s))
            except ExecutorError as exc:
                problems.append(f"{node_sampler.node}: {exc}")
        if receipt_path.parent.is_dir():
            record = TelemetryRecord(hosts=hosts, problems=problems)
            write_atomically(record, telemetry_path(receipt_path))
