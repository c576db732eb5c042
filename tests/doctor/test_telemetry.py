"""The bench telemetry sampler on this machine's real /proc: its readers, its own CPU cost, and a
real bench run against the session's llama-server whose report draws the telemetry."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from sparkrig.doctor.telemetry import (
    Sampler,
    cpu_times,
    interface_bytes,
    meminfo_bytes,
    rdma_counters,
    swap_pages,
)
from sparkrig.doctor.telemetry_model import TelemetryRecord
from sparkrig.doctor.telemetry_record import telemetry_path
from sparkrig.launch.local import LocalInstance
from tests.conftest import SPARKRIG

PROC = Path("/proc")


def test_readers_on_this_machine() -> None:
    busy, total = cpu_times((PROC / "stat").read_text())
    assert 0 < busy < total
    assert meminfo_bytes((PROC / "meminfo").read_text()) > 0
    swap_in, swap_out = swap_pages((PROC / "vmstat").read_text())
    assert swap_in >= 0
    assert swap_out >= 0
    assert "lo" not in interface_bytes((PROC / "net" / "dev").read_text())
    with pytest.raises(ValueError, match="not /proc/stat"):
        cpu_times("<html>")


def test_sampler_records_its_samples_and_its_own_cost() -> None:
    with Sampler(interval_s=0.25) as sampler:
        time.sleep(2.0)
    telemetry = sampler.result("here")
    assert len(telemetry.samples) >= 3  # 7 when the machine is idle
    assert [s.t_s for s in telemetry.samples] == sorted(s.t_s for s in telemetry.samples)
    assert all(0 <= s.cpu_percent <= 100 for s in telemetry.samples)
    assert 0 < telemetry.sampler_cpu_s < telemetry.sampler_wall_s
    # four /proc reads and a pydantic model per sample: a few ms, even on this shared machine
    assert telemetry.sampler_cpu_s / len(telemetry.samples) < 0.05
    assert "nvidia-ml-py" in telemetry.gpu_source or telemetry.gpu_source.startswith("nvml")


@pytest.mark.engine
def test_bench_writes_telemetry_beside_the_receipt_and_draws_it(
    llama_server: LocalInstance, tmp_path: Path
) -> None:
    out = tmp_path / "bench.json"
    done = subprocess.run(
        [
            SPARKRIG,
            "bench",
            llama_server.base_url,
            "--suite",
            "decode",
            "--max-samples",
            "2",
            "--tokens",
            "16",
            "--precision",
            "0.5",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    record = TelemetryRecord.model_validate(json.loads(telemetry_path(out).read_text()))
    assert [host.samples != [] for host in record.hosts] == [True]
    page = out.with_suffix(".html").read_text()
    assert "<h3>telemetry</h3>" in page
    assert "the sampler itself used" in page
    off = tmp_path / "off.json"
    subprocess.run(
        [
            SPARKRIG,
            "bench",
            llama_server.base_url,
            "--suite",
            "decode",
            "--max-samples",
            "2",
            "--tokens",
            "16",
            "--precision",
            "0.5",
            "--out",
            str(off),
            "--no-telemetry",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    assert not telemetry_path(off).exists()
    assert "<h3>telemetry</h3>" not in off.with_suffix(".html").read_text()


@pytest.mark.engine
def test_check_writes_telemetry_and_report_draws_it(
    llama_server: LocalInstance, tmp_path: Path
) -> None:
    out = tmp_path / "check.json"
    subprocess.run(
        [SPARKRIG, "check", llama_server.base_url, "--guard", "stream_parity", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.exists()
    record = TelemetryRecord.model_validate_json(telemetry_path(out).read_text())
    assert record.hosts[0].sampler_wall_s > 0
    page = tmp_path / "page.html"
    done = subprocess.run(
        [SPARKRIG, "report", str(out), "--out", str(page)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "<h3>telemetry</h3>" in page.read_text()


def test_rdma_counters_from_the_pair_fixture() -> None:
    from sparkrig.doctor.parse import sysfs_values
    from tests.doctor.fixtures import FIXTURES

    values = sysfs_values((FIXTURES / "pair-roce-retrans/spark1/ib_sysfs.out").read_text())
    ports = rdma_counters(values)
    assert ports["rocep1s0f0/1"] == (4 * 811203944, 4 * 810977520, 1843 + 12 + 57)
    assert ports["roceP2p1s0f0/1"][2] == 0


def test_sampler_reads_rdma_ports_where_sysfs_has_them(tmp_path: Path) -> None:
    """No RDMA device here: a tree in sysfs's layout stands in, its counters rising meanwhile."""
    port = tmp_path / "class/infiniband/rocep1s0f0/ports/1"
    (port / "counters").mkdir(parents=True)
    (port / "hw_counters").mkdir()
    files = {
        "counters/port_rcv_data": 0,
        "counters/port_xmit_data": 0,
        "hw_counters/roce_adp_retrans": 0,
    }
    for name, value in files.items():
        (port / name).write_text(f"{value}\n")

    def rise(name: str, value: int) -> None:  # whole files only, as sysfs answers
        (port / f"{name}.new").write_text(f"{value}\n")
        (port / f"{name}.new").rename(port / name)

    with Sampler(interval_s=0.2, sysfs=tmp_path) as sampler:
        for step in range(1, 21):  # 2 s: enough readings even on a loaded machine
            time.sleep(0.1)
            rise("counters/port_rcv_data", step * 25_000)  # 4-byte words
            rise("hw_counters/roce_adp_retrans", step)
    samples = sampler.result("here").samples
    assert any(s.rdma_rx_bytes_s.get("rocep1s0f0/1", 0) > 0 for s in samples)
    assert sum(s.roce_errors.get("rocep1s0f0/1", 0) for s in samples) > 0
    assert all(s.rdma_tx_bytes_s.get("rocep1s0f0/1", 0) == 0 for s in samples)


@pytest.mark.engine
def test_report_of_a_glob_that_catches_the_telemetry_files(
    llama_server: LocalInstance, tmp_path: Path
) -> None:
    out = tmp_path / "check.json"
    subprocess.run(
        [SPARKRIG, "check", llama_server.base_url, "--guard", "stream_parity", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    everything = sorted(str(p) for p in tmp_path.glob("*.json"))  # what `runs/*.json` expands to
    assert len(everything) == 2
    done = subprocess.run(
        [SPARKRIG, "report", *everything, "--out", str(tmp_path / "all.html")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "all.html").read_text().count("<h3>telemetry</h3>") == 1
