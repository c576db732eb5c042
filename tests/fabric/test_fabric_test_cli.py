"""`sparkrig fabric test` through the real CLI and real worker processes on this machine (the
local executor runs every node on 127.0.0.1): the plan, a 4-ring run with its receipt, and
every bad input as a one-line error with nothing left running."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from sparkrig.errors import FabricError, PortInUseError, UsageError
from sparkrig.fabric.collectives.fabric_test import decide_backend
from tests.fabric.collective_ranks import free_port

pytest.importorskip("torch")

SPARKRIG = str(Path(sys.executable).with_name("sparkrig"))
RING4 = """name = "ring4"
cables = ["a.p0 <-> b.p1", "b.p0 <-> c.p1", "c.p0 <-> d.p1", "d.p0 <-> a.p1"]
[[nodes]]
name = "a"
[[nodes]]
name = "b"
[[nodes]]
name = "c"
[[nodes]]
name = "d"
"""
HERE = ("--executor", "local")  # every node a process of this machine: the rehearsal
WIDE = {"COLUMNS": "1000"}  # one printed line a worker, unwrapped
LINE3 = """cables = ["a.p0 <-> b.p1", "b.p0 <-> c.p1"]
[[nodes]]
name = "a"
[[nodes]]
name = "b"
[[nodes]]
name = "c"
"""


def _workers_running(port: int) -> list[str]:
    """Command lines of any fabric-test worker for this port still alive."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"sparkrig.fabric.collectives.worker" in argv and str(port).encode() in argv:
            found.append(" ".join(a.decode() for a in argv))
    return found


def _sparkrig(
    tmp_path: Path, cluster: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "cluster.toml"
    path.write_text(cluster)
    return subprocess.run(
        [SPARKRIG, "fabric", "test", str(path), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
        cwd=tmp_path,
        check=False,
    )


def _one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode != 0, result.stdout
    assert "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 or " — " in " ".join(lines), result.stderr
    return " ".join(lines)


def test_without_apply_it_prints_each_nodes_worker_and_starts_nothing(tmp_path: Path) -> None:
    port = free_port()
    result = _sparkrig(tmp_path, RING4, *HERE, "--port", str(port))
    assert result.returncode == 0, result.stderr
    assert "ranks a → b → c → d → a" in result.stdout
    assert "nothing started — add --apply" in result.stdout
    assert "--rank 3" in result.stdout.replace("\n", " ")
    assert not _workers_running(port)
    assert not (tmp_path / "sparkrig-runs").exists()


def test_a_ring_of_four_passes_every_check_and_keeps_a_receipt(tmp_path: Path) -> None:
    port = free_port()
    out = tmp_path / "receipt.json"
    result = _sparkrig(
        tmp_path,
        RING4,
        *HERE,
        "--apply",
        "--port",
        str(port),
        "--sizes",
        "8K,64K",
        "--iterations",
        "2",
        "--json",
        "--out",
        str(out),
    )
    assert result.returncode == 0, result.stderr
    printed = json.loads(result.stdout)
    kept = json.loads(out.read_text())
    assert printed == kept
    assert kept["kind"] == "sparkrig-fabric-test"
    assert kept["complete"] is True
    assert kept["executor"] == "local"
    assert kept["rehearsal"] is True  # every rank on 127.0.0.1: no cable was tested
    assert "rehearsal on this machine's loopback: no cable was tested" in result.stderr
    assert kept["backend"] == "gloo"
    assert [(c["node"], c["failed"]) for c in kept["checks"]] == [
        (n, []) for n in ["a", "b", "c", "d"]
    ]
    # 4 collectives x 2 implementations x 3 dtypes x 4 counts
    assert {c["passed"] for c in kept["checks"]} == {96}
    measured = {(p["collective"], p["implementation"], p["size_bytes"]) for p in kept["points"]}
    assert len(measured) == 4 * 2 * 2
    assert all(p["busbw_gbps"] and p["busbw_gbps"] > 0 for p in kept["points"])
    assert not _workers_running(port)
    page = out.with_suffix(".html").read_text()
    assert "receipt.json · fabric test" in page
    assert page.count("<tr><td>all_to_all</td>") == 2  # one row per size
    again = subprocess.run(
        [SPARKRIG, "report", str(out), "--out", str(tmp_path / "again.html")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert again.returncode == 0, again.stderr
    assert "correctness per rank" in (tmp_path / "again.html").read_text()


def test_a_file_without_executors_is_refused_with_the_rehearsal_as_one_way_out(
    tmp_path: Path,
) -> None:
    """The executor comes from the file; with none there and none given, nothing runs on
    loopback behind the user's back."""
    port = free_port()
    message = _one_line_error(_sparkrig(tmp_path, RING4, "--apply", "--port", str(port)))
    assert message == (
        "error: the cluster file has no [executor] — give it one (ssh), pass --executor ssh or "
        "netns, or rehearse on this machine's loopback with --executor local (no cable is tested)"
    )
    assert not _workers_running(port)
    assert not (tmp_path / "sparkrig-runs").exists()


def test_the_files_executors_decide_and_all_local_is_a_rehearsal(tmp_path: Path) -> None:
    here = _sparkrig(tmp_path, RING4 + '[executor]\nkind = "local"\n', env=WIDE)
    assert here.returncode == 0, here.stderr
    assert "master 127.0.0.1:" in here.stdout
    assert "on this machine's loopback, 127.0.0.1: a rehearsal, no cable is tested" in here.stdout


def test_each_node_runs_the_python_its_executor_has(tmp_path: Path) -> None:
    """Node a is this machine (local), b to d are ssh nodes: this interpreter on a, python3 on
    the others, and the master on a's cable address: no rehearsal."""
    ssh_ring = RING4.replace('name = "a"', 'name = "a"\nexecutor = { kind = "local" }')
    for node in "bcd":
        ssh_ring = ssh_ring.replace(f'name = "{node}"', f'name = "{node}"\nssh = "admin@{node}"')
    result = _sparkrig(tmp_path, ssh_ring + '[executor]\nkind = "ssh"\n', env=WIDE)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "on local, ssh" in lines[0]
    assert "rehearsal" not in result.stdout
    assert "master 10.20." in lines[0]
    workers = {line[0]: line for line in lines if line[:2] in {"a:", "b:", "c:", "d:"}}
    assert f" {sys.executable} -W ignore" in workers["a"]
    assert all(" python3 -W ignore" in workers[node] for node in "bcd")


def test_a_line_is_refused_with_the_cable_that_closes_it(tmp_path: Path) -> None:
    message = _one_line_error(_sparkrig(tmp_path, LINE3, "--apply"))
    assert "a,b,c form a line, not a ring: c has no cable to a — cable c to a" in message


@pytest.mark.parametrize("sizes", ["0", "8K,-1K", "8X"])
def test_a_ladder_with_a_zero_negative_or_unreadable_size_is_refused(
    tmp_path: Path, sizes: str
) -> None:
    result = _sparkrig(tmp_path, RING4, "--apply", "--sizes", sizes)
    assert result.returncode == 2
    assert f"--sizes {sizes!r}" in _one_line_error(result)


def test_a_port_in_use_on_the_master_is_named(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        result = _sparkrig(tmp_path, RING4, *HERE, "--apply", "--port", str(port))
    message = _one_line_error(result)
    assert f"port {port} on a (rank 0, the master) is in use — pass --port" in message
    assert not _workers_running(port)


def test_nccl_where_no_gpu_is_seen_is_refused(tmp_path: Path) -> None:
    message = _one_line_error(_sparkrig(tmp_path, RING4, *HERE, "--apply", "--backend", "nccl"))
    assert "--backend nccl needs a GPU on every node; torch sees none on a, b, c, d" in message


def test_a_node_without_torch_gets_the_install_line(tmp_path: Path) -> None:
    bare = "/usr/bin/python3"
    check = subprocess.run([bare, "-c", "import torch"], capture_output=True, check=False)
    if check.returncode == 0 or not Path(bare).exists():
        pytest.skip(f"{bare} has torch (or is missing): no torch-less interpreter here")
    source = str(Path(__file__).parents[2] / "src")
    result = _sparkrig(
        tmp_path, RING4, *HERE, "--apply", "--python", bare, env={"PYTHONPATH": source}
    )
    message = _one_line_error(result)
    assert "torch is not installed on a, b, c, d — install it there: pip install" in message
    assert "sparkrig[collectives]" in message


def test_an_unreachable_node_is_named(tmp_path: Path) -> None:
    result = _sparkrig(
        tmp_path, RING4, "--apply", "--executor", "netns", "--netns-prefix", "sr-absent-"
    )
    message = _one_line_error(result)
    assert "network namespace sr-absent-a does not exist" in message


@pytest.mark.parametrize(
    ("fault", "expected"),
    [
        ("c:exit", "node c (rank 2) died: exit status 3"),
        ("c:hang", "node c (rank 2) stopped answering: no heartbeat for 3 s"),
    ],
)
def test_a_node_that_dies_or_hangs_is_named_and_nothing_is_left_running(
    tmp_path: Path, fault: str, expected: str
) -> None:
    port = free_port()
    result = _sparkrig(
        tmp_path,
        RING4,
        *HERE,
        "--apply",
        "--port",
        str(port),
        "--sizes",
        "8K",
        "--liveness",
        "3",
        env={"SPARKRIG_FABRIC_TEST_FAULT": fault},
    )
    assert expected in _one_line_error(result)
    assert not _workers_running(port)
    receipts = list((tmp_path / "sparkrig-runs").glob("fabric-test-*.json"))
    assert len(receipts) == 1
    kept = json.loads(receipts[0].read_text())
    assert kept["complete"] is False
    assert expected in kept["problems"][0]


def test_a_collective_that_returns_wrong_numbers_fails_the_run(tmp_path: Path) -> None:
    """Node c's sparkrig all-reduce comes back one element off by one (a real Gloo run, the
    fault applied to the result on that rank): the checks say so and the command fails."""
    port = free_port()
    out = tmp_path / "receipt.json"
    result = _sparkrig(
        tmp_path,
        RING4,
        *HERE,
        "--apply",
        "--port",
        str(port),
        "--sizes",
        "8K",
        "--iterations",
        "1",
        "--out",
        str(out),
        env={"SPARKRIG_FABRIC_TEST_FAULT": "c:wrong-sums"},
    )
    # 3 dtypes x 4 counts of the all-reduce on c
    assert "12 correctness check(s) failed — see the table" in _one_line_error(result)
    assert result.returncode == 1
    kept = json.loads(out.read_text())
    failed = {check["node"]: check["failed"] for check in kept["checks"]}
    assert failed["a"] == failed["b"] == failed["d"] == []
    assert len(failed["c"]) == 12
    assert all(name.startswith("all_reduce/sparkrig/") for name in failed["c"])
    assert {c["passed"] for c in kept["checks"] if c["node"] == "c"} == {96 - 12}
    assert "all_reduce/sparkrig/float32/1" in result.stdout  # the table names them
    assert "rehearsal on this machine's loopback: no cable was tested" in result.stdout
    assert not _workers_running(port)


# what `worker probe` printed on this machine (torch 2.13.0+cpu, no GPU), varied for the cases
# this machine cannot show: one torch version only, and no GPU
PROBE = {"python": "3.11.2", "torch": "2.13.0+cpu", "gpus": 0, "port_free": True}


def test_different_torch_versions_across_nodes_are_refused() -> None:
    probes = {"a": PROBE, "b": {**PROBE, "torch": "2.12.1+cu128"}}
    with pytest.raises(FabricError, match=r"torch differs across nodes \(a 2.13.0\+cpu, b 2."):
        decide_backend(probes, "auto", "a", 29511)


def test_the_backend_follows_what_every_node_has() -> None:
    gpus = {**PROBE, "gpus": 1}
    assert decide_backend({"a": gpus, "b": gpus}, "auto", "a", 1) == "nccl"
    assert decide_backend({"a": gpus, "b": PROBE}, "auto", "a", 1) == "gloo"
    with pytest.raises(UsageError, match="torch sees none on b"):
        decide_backend({"a": gpus, "b": PROBE}, "nccl", "a", 1)
    with pytest.raises(PortInUseError):
        decide_backend({"a": {**PROBE, "port_free": False}}, "gloo", "a", 1)
