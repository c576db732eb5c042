"""Telemetry of cluster nodes through their executors: the shell loop runs in two real network
namespaces while one pings the other, and what comes back is parsed into samples; `check
--telemetry-cluster` samples the nodes of a cluster file and the report draws each."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from sparkrig.doctor import node_telemetry
from sparkrig.doctor.node_telemetry import gpu_rows, parse_stream
from sparkrig.doctor.telemetry_model import TelemetryRecord
from sparkrig.doctor.telemetry_record import cluster_nodes, telemetry_path
from sparkrig.errors import UsageError
from sparkrig.launch.local import LocalInstance
from tests.conftest import SPARKRIG
from tests.fabric.netns_lab import netns_lab, why_netns_unavailable

UNAVAILABLE = why_netns_unavailable()


@pytest.mark.skipif(UNAVAILABLE is not None, reason=UNAVAILABLE or "")
def test_node_samplers_in_namespaces_see_the_traffic_between_them() -> None:
    with netns_lab(["x", "y"], [("x", "p0", "y", "p0")]) as lab:
        for node, address in (("x", "10.99.0.1/24"), ("y", "10.99.0.2/24")):
            lab.run(node, "ip", "address", "add", address, "dev", "p0a")
            lab.run(node, "ip", "link", "set", "p0a", "up")
        samplers = {n: node_telemetry.start(n, lab.runners[n], 0.3) for n in ("x", "y")}
        time.sleep(0.4)
        for _ in range(5):  # MTU-sized echo requests, through the fabric probe
            lab.ping("x", ["10.99.0.2"], 1400)
        time.sleep(0.4)
        records = {n: node_telemetry.stop(s, lab.runners[n], 0.3) for n, s in samplers.items()}
        leftover = lab.run("x", "sh", "-c", f"ls {samplers['x'].path} 2>&1 || true")
    assert "No such file" in leftover  # the node keeps nothing behind
    for node, telemetry in records.items():
        assert telemetry.host == node
        assert len(telemetry.samples) >= 3
        assert telemetry.sampler_wall_s > 0
        assert 0 <= telemetry.sampler_cpu_s < telemetry.sampler_wall_s
        assert telemetry.gpu_source == "no GPU figures: no nvidia-smi on the node"
    sent = sum(s.net_tx_bytes_s.get("p0a", 0) for s in records["x"].samples)
    received = sum(s.net_rx_bytes_s.get("p0a", 0) for s in records["y"].samples)
    assert sent > 0
    assert received > 0


@pytest.mark.skipif(UNAVAILABLE is not None, reason=UNAVAILABLE or "")
def test_a_loop_nobody_stops_ends_by_itself() -> None:
    with netns_lab(["x"], []) as lab:
        sampler = node_telemetry.start("x", lab.runners["x"], 0.2, lifetime_s=2)
        time.sleep(4.5)
        alive = lab.run("x", "sh", "-c", f"kill -0 {sampler.pid} 2>/dev/null && echo alive || true")
        telemetry = node_telemetry.stop(sampler, lab.runners["x"], 0.2)
    assert alive.strip() == ""
    # date +%s counts whole seconds: two to three seconds of samples, not the 4.5 s waited
    assert 1 <= len(telemetry.samples) < 17


def test_a_stream_cut_by_the_kill_keeps_the_whole_blocks() -> None:
    block = "@@ {t}\n@@@ stat\ncpu  {b} 0 0 {i} 0 0 0 0 0 0\n@@@ vmstat\npswpin 0\npswpout 0\n"
    block += "@@@ meminfo\nMemTotal: 1000 kB\nMemAvailable: 400 kB\n"
    block += "@@@ net/dev\nh1\nh2\n  p0a: 1000 0 0 0 0 0 0 0 {tx} 0 0 0 0 0 0 0\n@@@ rdma\n"
    block += "@@@ gpu\n" + H200_QUERY_LINE
    text = (
        "@@cost 100 5 3 0 0 1000 2000.5\n"
        + "".join(block.format(t=100 + k, b=50 * k, i=50 * k, tx=1000 * k) for k in range(3))
        + "@@ 103.0\n@@@ stat\ncpu  1"
    )
    telemetry = parse_stream(text, "n", 1.0)
    assert [s.cpu_percent for s in telemetry.samples] == [50.0, 50.0]
    assert [s.net_tx_bytes_s["p0a"] for s in telemetry.samples] == [1000.0, 1000.0]
    assert telemetry.samples[0].memory_used_bytes == 600 * 1024
    assert (telemetry.sampler_cpu_s, telemetry.sampler_wall_s) == (0.08, 1990.5)
    assert telemetry.gpu_source == "nvidia-smi"
    assert telemetry.samples[0].gpus[0].power_w == 99.13


# `nvidia-smi --query-gpu=GPU_QUERY --format=csv,noheader,nounits`, captured on the H200 host
H200_QUERY_LINE = "0, 345, 3201, 99.13, 38, 0, 0x0000000000000001\n"


def test_gpu_rows_of_the_real_query_and_unsupported_fields() -> None:
    [gpu] = gpu_rows(H200_QUERY_LINE)
    assert (gpu.sm_clock_mhz, gpu.mem_clock_mhz, gpu.temperature_c) == (345, 3201, 38)
    assert (gpu.utilization_percent, gpu.clock_event_reasons) == (0, 1)
    # a field the board does not support reads [N/A] in this format: left out, not fatal
    [partial] = gpu_rows("0, 2405, [N/A], [N/A], 51, 96, 0x0000000000000000\n")
    assert (partial.sm_clock_mhz, partial.mem_clock_mhz, partial.power_w) == (2405, None, None)
    assert gpu_rows("NVIDIA-SMI has failed because it couldn't communicate with the driver\n") == []


@pytest.mark.engine
@pytest.mark.skipif(UNAVAILABLE is not None, reason=UNAVAILABLE or "")
def test_check_samples_every_node_of_the_telemetry_cluster(
    llama_server: LocalInstance, tmp_path: Path
) -> None:
    with netns_lab(["x", "y"], []) as lab:
        cluster = tmp_path / "nodes.toml"
        cluster.write_text(
            'name = "nodes"\n'
            + "".join(
                f'[[nodes]]\nname = "{n}"\nexecutor = {{ kind = "netns", target = '
                f'"{lab.namespace(n)}" }}\n'
                for n in ("x", "y")
            )
        )
        out = tmp_path / "check.json"
        done = subprocess.run(
            [
                SPARKRIG,
                "check",
                llama_server.base_url,
                "--guard",
                "stream_parity",
                "--out",
                str(out),
                "--telemetry-cluster",
                str(cluster),
            ],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    assert out.exists(), done.stderr
    record = TelemetryRecord.model_validate_json(telemetry_path(out).read_text())
    assert [host.host for host in record.hosts][1:] == ["x", "y"]
    assert record.problems == []
    page = tmp_path / "page.html"
    subprocess.run([SPARKRIG, "report", str(out), "--out", str(page)], check=True, timeout=60)
    assert "<h4>x</h4>" in page.read_text()


def test_a_telemetry_cluster_without_executors_names_the_ways_out(tmp_path: Path) -> None:
    """bench and check have no --executor or --node: the file's executors decide, and a file
    with none says what to do in the terms of those commands."""
    path = tmp_path / "pair.toml"
    text = 'cables = ["a.p0 <-> b.p1"]\n[[nodes]]\nname = "a"\n[[nodes]]\nname = "b"\n'
    path.write_text(text)
    with pytest.raises(UsageError) as refused:
        cluster_nodes(path)
    assert str(refused.value) == (
        "the cluster file has no [executor] — give it one (ssh) to sample its nodes, or leave "
        "out --cluster"
    )
    path.write_text(text + '[executor]\nkind = "netns"\ntarget = "ns"\n')
    assert sorted(cluster_nodes(path)) == ["a", "b"]
