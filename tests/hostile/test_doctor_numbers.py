"""Hostile numbers in doctor's captured output (docs/errors.md, class 9): a real fixture with one
number replaced by an overflow, NaN or infinity, non-ASCII digits or a negative count. The check
that reads it is skipped with the file, the field and the value named, and every other check
still runs; where a reader takes an unusable value as absent (a link speed, an RDMA counter) the
check says nothing rather than something false. Run through `doctor --load`, as a user would."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.hostile.conftest import run_cli

DOCTOR = Path(__file__).parents[1] / "fixtures" / "doctor"

HOSTILE = {"arabic": "٣", "superscript": "²", "negative": "-5", "overflow": "1e400", "nan": "nan"}
HOSTILE_WHOLE = {**HOSTILE, "digits-200": "9" * 200}

# case -> (fixture, node's file, the text replaced, the check, what its skip reason must name)
READS: dict[str, tuple[str, str, str, str, str]] = {
    "meminfo-total": (
        "memory-short",
        "n1/meminfo.out",
        "131961788",
        "engine-start-memory",
        "/proc/meminfo: MemTotal is",
    ),
    "vmstat-swap-in": ("swapping", "vm/vmstat.out", " 412 ", "swap-activity", "vmstat: si is"),
    "apst-timeout": (
        "apst-default",
        "n1/module_sysfs.out",
        "apst_primary_timeout_ms:100",
        "nvme-apst",
        "apst_primary_timeout_ms is",
    ),
    "gpus-attached": (
        "h200",
        "h200/nvidia_smi.out",
        "<attached_gpus>1<",
        "gpu-visible",
        "attached_gpus is",
    ),
    "chrony-offset": (
        "chrony-synced",
        "n1/chronyc.out",
        "0.000012345",
        "clock-sync",
        "chronyc tracking: System time is",
    ),
}


def with_number(fixture: str, file: str, old: str, value: str, root: Path) -> Path:
    """A copy of the fixture whose first `old` carries `value` in place of its number."""
    copy = root / fixture
    shutil.copytree(DOCTOR / fixture, copy)
    path = copy / file
    text = path.read_text()
    assert old in text, (fixture, file, old)
    number = "".join(ch for ch in old if ch.isdigit() or ch == ".")
    path.write_text(text.replace(old, old.replace(number, value, 1), 1))
    return copy


def doctor_report(folder: Path) -> dict[str, Any]:
    cluster = folder / "cluster.toml"
    args = [str(cluster)] if cluster.exists() else []
    outcome = run_cli("doctor", *args, "--load", str(folder), "--json")
    assert "Traceback" not in outcome.stdout + outcome.stderr
    assert outcome.exception is None or isinstance(outcome.exception, SystemExit)
    return dict(json.loads(outcome.stdout))


@pytest.mark.parametrize("value", list(HOSTILE_WHOLE))
@pytest.mark.parametrize("case", list(READS))
def test_a_hostile_number_in_a_capture_skips_its_check_naming_it(
    case: str, value: str, tmp_path: Path
) -> None:
    fixture, file, old, check, says = READS[case]
    written = HOSTILE_WHOLE[value]
    if case == "chrony-offset" and value == "negative":
        written = "-0.5"  # chrony writes the offset's size and "fast"/"slow"; never a sign
    report = doctor_report(with_number(fixture, file, old, written, tmp_path))

    skipped = [s for s in report["skipped"] if check in s["checks"]]
    assert len(skipped) == 1, report
    reason = skipped[0]["reason"]
    assert says in reason
    assert repr(written[:20])[:-1] in reason  # the value as the capture holds it (excerpted)
    assert " — " in reason
    assert not [f for f in report["findings"] if f["check"] == check]


@pytest.mark.parametrize("value", ["inf", "nan", "1e400", "-5", "٣"])
def test_a_hostile_clock_reading_skips_the_offset_check(value: str, tmp_path: Path) -> None:
    copy = tmp_path / "ring4"
    shutil.copytree(DOCTOR / "ring4-clock-skew", copy)
    (copy / "b" / "clock.out").write_text(f"{value}\n")

    report = doctor_report(copy)

    skipped = [s for s in report["skipped"] if "clock-offset" in s["checks"]]
    assert [s["node"] for s in skipped] == ["cluster"]
    assert f"clock {value!r} is not seconds since 1970" in skipped[0]["reason"]
    assert report["checks_run"] > 1  # the other checks ran


@pytest.mark.parametrize("value", ["²", "-5", "1e400", "9" * 200])
def test_a_hostile_rdma_counter_is_absent_not_a_count(value: str, tmp_path: Path) -> None:
    """pair-roce-retrans with every retransmit counter unreadable: no count is made up (the
    counters read as absent), and nothing false is said; one readable counter still fires."""
    copy = tmp_path / "pair"
    shutil.copytree(DOCTOR / "pair-roce-retrans", copy)
    sysfs = copy / "spark1" / "ib_sysfs.out"
    lines = sysfs.read_text().splitlines()
    hostile = [
        line.rpartition(":")[0] + f":{value}"
        if "hw_counters/" in line and not line.endswith(":0")
        else line
        for line in lines
    ]
    sysfs.write_text("\n".join(hostile) + "\n")

    quiet = doctor_report(copy)
    assert not [f for f in quiet["findings"] if f["check"] == "roce-retransmits"]

    one_left = [*hostile, "/sys/class/infiniband/rocep1s0f0/ports/1/hw_counters/packet_seq_err:3"]
    sysfs.write_text("\n".join(one_left) + "\n")
    fired = [f for f in doctor_report(copy)["findings"] if f["check"] == "roce-retransmits"]
    assert [f["seen"] for f in fired] == [
        "rocep1s0f0 port 1: packet_seq_err 3 since the counters were last reset"
    ]


@pytest.mark.parametrize("value", ["²", "1e400", "9" * 200])
def test_a_hostile_link_speed_is_absent_not_slow(value: str, tmp_path: Path) -> None:
    """pair-veth-speed (10 Gb/s veths, a warning) with the speeds unreadable: no speed is made
    up, so no warning; a down link's -1 is the kernel's own absent value."""
    copy = tmp_path / "pair"
    shutil.copytree(DOCTOR / "pair-veth-speed", copy)
    for node in ("spark1", "spark2"):
        path = copy / node / "net_sysfs.out"
        path.write_text(path.read_text().replace("/speed:10000", f"/speed:{value}"))

    report = doctor_report(copy)

    assert not [f for f in report["findings"] if f["check"] == "link-speed"]
    assert report["checks_run"] >= 1


# --- telemetry: the node sampler's stream and this host's sampler --------------------------------

BLOCK = (
    "@@ {t}\n@@@ stat\ncpu  {busy} 0 0 {idle} 0 0 0 0 0 0\n@@@ vmstat\npswpin {swap}\npswpout 0\n"
    "@@@ meminfo\nMemTotal: 1000 kB\nMemAvailable: 400 kB\n"
    "@@@ net/dev\nh1\nh2\n  p0a: {rx} 0 0 0 0 0 0 0 {tx} 0 0 0 0 0 0 0\n@@@ rdma\n@@@ gpu\n"
)


def stream(*blocks: dict[str, object], cost: str = "100 5 3 0 0 1000 2000.5") -> str:
    """`@@cost` and one block per dict, each a steady second (50% busy, 1000 B/s) unless the
    dict says otherwise."""
    text = f"@@cost {cost}\n"
    for k, fields in enumerate(blocks):
        values = {"t": 100 + k, "busy": 50 * k, "idle": 50 * k, "swap": 0, "rx": 0, "tx": 1000 * k}
        text += BLOCK.format(**{**values, **fields})
    return text


@pytest.mark.parametrize("ticks", ["0", "²", "nan", "1e400", "-100"])
def test_a_cost_line_without_a_tick_rate_is_an_unknown_cost(ticks: str) -> None:
    from sparkrig.doctor.node_telemetry import parse_stream

    telemetry = parse_stream(stream({}, {}, cost=f"{ticks} 5 3 0 0 1000 2000.5"), "n", 1.0)

    assert (telemetry.sampler_cpu_s, telemetry.sampler_wall_s) == (0.0, 0.0)  # never / 0
    assert telemetry.sampler_cpu_percent == 0.0
    assert [s.cpu_percent for s in telemetry.samples] == [50.0]


@pytest.mark.parametrize(
    ("fault", "says"),
    [
        ({"busy": 0, "idle": 0}, "the CPU ticks (/proc/stat) went backwards, from 100 to 0"),
        ({"swap": -1}, "/proc/vmstat: pswpin is '-1'"),
        ({"swap": "٣"}, "/proc/vmstat: pswpin is '٣' (not ASCII digits)"),
        ({"busy": "1e400"}, "/proc/stat: cpu is '1e400'"),
        ({"t": "nan"}, "its `@@ TIME` line is not seconds since 1970"),
        ({"t": 100.5}, "the clock went backwards, from 101.0 to 100.5"),
    ],
)
def test_a_block_that_goes_backwards_or_is_not_a_number_is_left_out_and_named(
    fault: dict[str, object], says: str
) -> None:
    """Four steady seconds with the third block hostile: the samples around it are never a
    negative or an infinite rate, the stream goes on, and `left_out` says why."""
    from sparkrig.doctor.node_telemetry import parse_stream

    telemetry = parse_stream(stream({}, {}, fault, {}, {}), "n", 1.0)

    assert any(says in note for note in telemetry.left_out), telemetry.left_out
    assert telemetry.samples  # the blocks around it still make samples
    for sample in telemetry.samples:
        assert 0 <= sample.cpu_percent <= 100
        assert sample.swap_in_pages_s >= 0
        assert all(0 <= rate < 1e6 for rate in sample.net_tx_bytes_s.values())


def test_an_interface_whose_counters_reset_has_no_rate_in_that_sample() -> None:
    """p0a's tx counter drops to 0 at the third block (a driver reload): that sample has no
    p0a rate, never -2000 B/s, and the next one measures again."""
    from sparkrig.doctor.node_telemetry import parse_stream

    telemetry = parse_stream(stream({}, {}, {"tx": 0}, {"tx": 1000}), "n", 1.0)

    assert [s.net_tx_bytes_s.get("p0a") for s in telemetry.samples] == [1000.0, None, 1000.0]
    assert [s.cpu_percent for s in telemetry.samples] == [50.0, 50.0, 50.0]


def test_this_hosts_sampler_keeps_sampling_past_an_unreadable_proc_file(tmp_path: Path) -> None:
    """A /proc whose stat holds `²`: every reading is left out and named, and the sampler's
    thread lives to the end of the block instead of dying on the first one."""
    import time

    from sparkrig.doctor.telemetry import Sampler

    proc = tmp_path / "proc"
    (proc / "net").mkdir(parents=True)
    (proc / "stat").write_text("cpu  ² 0 0 5 0 0 0 0 0 0\n")
    (proc / "vmstat").write_text("pswpin 0\npswpout 0\n")
    (proc / "meminfo").write_text("MemTotal: 1000 kB\nMemAvailable: 400 kB\n")
    (proc / "net" / "dev").write_text("h1\nh2\n")
    sampler = Sampler(0.05, proc=proc, sysfs=tmp_path / "sys")
    with sampler:
        time.sleep(0.4)

    telemetry = sampler.result("h")
    assert telemetry.samples == []
    assert len(telemetry.left_out) >= 3  # it went on reading
    assert "/proc/stat: cpu is '²' (not ASCII digits)" in telemetry.left_out[0]
