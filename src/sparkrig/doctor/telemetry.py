"""A 1 s sampler of this host while a bench runs: CPU, memory, swap in/out, bytes per network
interface and RDMA port, and from NVML (`nvidia-ml-py`, only where it is installed and a GPU
answers) SM and memory clocks, power, temperature, utilisation and clock-event reasons.

The readers of /proc and sysfs are pure (`cpu_times`, `meminfo_bytes`, `swap_pages`,
`interface_bytes`); `Sampler` is the thin thread around them. The sampler measures its own CPU
time (`time.thread_time` inside its thread), so the cost is stated in every record."""

from __future__ import annotations

import importlib
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparkrig import defaults
from sparkrig.doctor.telemetry_model import GpuSample, Telemetry, TelemetrySample
from sparkrig.outside_numbers import int_or_none, parse_int

# --- pure readers -------------------------------------------------------------------------------


def cpu_times(stat: str) -> tuple[int, int]:
    """(busy, total) jiffies from /proc/stat's `cpu` line."""
    for line in stat.splitlines():
        if line.startswith("cpu "):
            values = [
                parse_int(v, source="/proc/stat", field="cpu", minimum=0) for v in line.split()[1:]
            ]
            idle = values[3] + (values[4] if len(values) > 4 else 0)  # idle + iowait
            return sum(values) - idle, sum(values)
    raise ValueError("no `cpu` line: not /proc/stat")


def meminfo_bytes(meminfo: str) -> int:
    values = {}
    for line in meminfo.splitlines():
        key, _, rest = line.partition(":")
        if rest.strip().endswith("kB"):
            values[key] = (
                parse_int(rest.split()[0], source="/proc/meminfo", field=key, minimum=0) * 1024
            )
    return values["MemTotal"] - values.get("MemAvailable", values.get("MemFree", 0))


def swap_pages(vmstat: str) -> tuple[int, int]:
    values = dict(line.split() for line in vmstat.splitlines() if line.count(" ") == 1)
    swapped_in, swapped_out = (
        parse_int(values.get(name, "0"), source="/proc/vmstat", field=name, minimum=0)
        for name in ("pswpin", "pswpout")
    )
    return swapped_in, swapped_out


def interface_bytes(net_dev: str) -> dict[str, tuple[int, int]]:
    """{interface: (rx bytes, tx bytes)} from /proc/net/dev, loopback left out."""
    found = {}
    for line in net_dev.splitlines()[2:]:
        name, _, rest = line.partition(":")
        fields = rest.split()
        if name.strip() != "lo" and len(fields) >= 9:
            found[name.strip()] = (
                parse_int(fields[0], source="/proc/net/dev", field=f"{name.strip()} rx", minimum=0),
                parse_int(fields[8], source="/proc/net/dev", field=f"{name.strip()} tx", minimum=0),
            )
    return found


def rdma_counters(values: dict[str, str]) -> dict[str, tuple[int, int, int]]:
    """{`device/port`: (rx bytes, tx bytes, RoCE error count)} from sysfs counter files
    (`…/infiniband/DEV/ports/N/counters/port_rcv_data` counts 4-byte words)."""
    ports: dict[str, list[int]] = {}
    for path, text in values.items():
        parts = path.split("/")
        if len(parts) < 5 or (count := int_or_none(text, minimum=0)) is None:
            continue
        key, kind, name = f"{parts[-5]}/{parts[-3]}", parts[-2], parts[-1]
        entry = ports.setdefault(key, [0, 0, 0])
        if kind == "counters" and name == "port_rcv_data":
            entry[0] = 4 * count
        elif kind == "counters" and name == "port_xmit_data":
            entry[1] = 4 * count
        elif kind == "hw_counters" and name in defaults.DOCTOR_ROCE_ERROR_COUNTERS:
            entry[2] += count
    return {key: (rx, tx, errors) for key, (rx, tx, errors) in ports.items()}


@dataclass(frozen=True)
class Reading:
    """One read of a host's counters; two readings make a sample."""

    t: float
    busy: int
    total: int
    memory_used: int
    swap_in: int
    swap_out: int
    net: dict[str, tuple[int, int]]
    rdma: dict[str, tuple[int, int, int]]


def reading(t: float, files: dict[str, str], rdma: dict[str, tuple[int, int, int]]) -> Reading:
    """`files`: the text of /proc/stat, vmstat, meminfo and net/dev by those names."""
    busy, total = cpu_times(files["stat"])
    swap_in, swap_out = swap_pages(files["vmstat"])
    return Reading(
        t=t,
        busy=busy,
        total=total,
        memory_used=meminfo_bytes(files["meminfo"]),
        swap_in=swap_in,
        swap_out=swap_out,
        net=interface_bytes(files["net/dev"]),
        rdma=rdma,
    )


def went_backwards(before: Reading, after: Reading) -> str | None:
    """What of the host went backwards between two readings (the clock stepped back, the CPU or
    swap counters reset), so no sample can be made of them; None when nothing did."""
    for name, was, now in (
        ("the clock", before.t, after.t),
        ("the CPU ticks (/proc/stat)", before.total, after.total),
        ("the busy CPU ticks (/proc/stat)", before.busy, after.busy),
        ("pswpin (/proc/vmstat)", before.swap_in, after.swap_in),
        ("pswpout (/proc/vmstat)", before.swap_out, after.swap_out),
    ):
        if now < was:
            return f"{name} went backwards, from {was} to {now}"
        if name == "the clock" and now == was:
            return f"the clock did not advance past {now}"
    return None


def sample_between(
    begin: float, before: Reading, after: Reading, gpus: list[GpuSample] | None = None
) -> TelemetrySample:
    """The rates between two readings `went_backwards` passed; an interface or port whose
    counters went backwards (a driver reload resets them) has no rate in this sample, never a
    negative one."""
    elapsed = max(after.t - before.t, 1e-6)
    busy, total = after.busy - before.busy, after.total - before.total
    names = [
        n for n in after.net if n in before.net and min(_rises(before.net[n], after.net[n])) >= 0
    ]
    ports = {
        p: v
        for p, v in after.rdma.items()
        if p in before.rdma and min(_rises(before.rdma[p], v)) >= 0
    }
    return TelemetrySample(
        t_s=round(after.t - begin, 3),
        cpu_percent=round(100 * busy / total, 1) if total else 0.0,
        memory_used_bytes=after.memory_used,
        swap_in_pages_s=(after.swap_in - before.swap_in) / elapsed,
        swap_out_pages_s=(after.swap_out - before.swap_out) / elapsed,
        net_rx_bytes_s={n: (after.net[n][0] - before.net[n][0]) / elapsed for n in names},
        net_tx_bytes_s={n: (after.net[n][1] - before.net[n][1]) / elapsed for n in names},
        rdma_rx_bytes_s={p: (v[0] - before.rdma[p][0]) / elapsed for p, v in ports.items()},
        rdma_tx_bytes_s={p: (v[1] - before.rdma[p][1]) / elapsed for p, v in ports.items()},
        roce_errors={p: v[2] - before.rdma[p][2] for p, v in ports.items()},
        gpus=gpus or [],
    )


def _rises(before: tuple[int, ...], after: tuple[int, ...]) -> list[int]:
    return [now - was for was, now in zip(before, after, strict=True)]


def left_out(begin: float, at: float, why: str) -> str:
    """A `Telemetry.left_out` line: when, and why that sample is not there."""
    return f"{at - begin:.1f} s: {why}; no sample there"


PROC_FILES = ("stat", "vmstat", "meminfo", "net/dev")


# --- the sampler ----------------------------------------------------------------------------------


class _Nvml:
    """NVML through nvidia-ml-py when installed and a GPU answers; otherwise `why` says not."""

    def __init__(self) -> None:
        self.module: Any = None
        self.handles: list[Any] = []
        try:
            module = importlib.import_module("pynvml")
            module.nvmlInit()
            count = module.nvmlDeviceGetCount()
            self.handles = [module.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
            self.module = module
            self.why = "nvml" if count else "nvml: no GPU"
        except ModuleNotFoundError:
            self.why = "no GPU figures: nvidia-ml-py is not installed (pip install nvidia-ml-py)"
        except Exception as exc:  # noqa: BLE001 - NVMLError and friends: no GPU to read
            self.why = f"no GPU figures: NVML did not start ({exc.__class__.__name__})"

    def read(self) -> list[GpuSample]:
        nvml = self.module
        if nvml is None:
            return []
        samples = []
        for index, handle in enumerate(self.handles):
            sample = GpuSample(index=index)
            readers: dict[str, Any] = {
                "sm_clock_mhz": lambda h: nvml.nvmlDeviceGetClockInfo(h, nvml.NVML_CLOCK_SM),
                "mem_clock_mhz": lambda h: nvml.nvmlDeviceGetClockInfo(h, nvml.NVML_CLOCK_MEM),
                "power_w": lambda h: nvml.nvmlDeviceGetPowerUsage(h) / 1000,
                "temperature_c": lambda h: nvml.nvmlDeviceGetTemperature(
                    h, nvml.NVML_TEMPERATURE_GPU
                ),
                "utilization_percent": lambda h: nvml.nvmlDeviceGetUtilizationRates(h).gpu,
                "clock_event_reasons": nvml.nvmlDeviceGetCurrentClocksThrottleReasons,
            }
            for field, read in readers.items():
                try:
                    setattr(sample, field, read(handle))
                except Exception:  # noqa: BLE001, S112 - GB10 answers Not Supported for some
                    continue
            samples.append(sample)
        return samples

    def close(self) -> None:
        if self.module is not None:
            self.module.nvmlShutdown()


class Sampler:
    """`with Sampler() as sampler: …` samples every `interval_s` in a daemon thread;
    `sampler.result()` after the block."""

    def __init__(
        self,
        interval_s: float = defaults.TELEMETRY_INTERVAL_S,
        proc: Path = Path("/proc"),
        sysfs: Path = Path("/sys"),
    ):
        self.interval_s = interval_s
        self.proc = proc
        self.sysfs = sysfs
        self._stop = threading.Event()
        self._samples: list[TelemetrySample] = []
        self._left_out: list[str] = []
        self._thread = threading.Thread(target=self._run, name="sparkrig-telemetry", daemon=True)
        self._cpu_s = 0.0
        self._started = time.time()
        self._wall_s = 0.0
        self._gpu_source = ""

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5 * self.interval_s + 5)

    def _read(self, name: str) -> str:
        return (self.proc / name).read_text(encoding="utf-8", errors="replace")  # ² shown as ²

    def _rdma(self) -> dict[str, tuple[int, int, int]]:
        files = [
            *self.sysfs.glob("class/infiniband/*/ports/*/counters/port_*_data"),
            *(
                path
                for name in defaults.DOCTOR_ROCE_ERROR_COUNTERS
                for path in self.sysfs.glob(f"class/infiniband/*/ports/*/hw_counters/{name}")
            ),
        ]
        values = {}
        for path in files:
            try:
                values[str(path)] = path.read_text(encoding="ascii")
            except OSError:
                continue
        return rdma_counters(values)

    def _run(self) -> None:
        begin, cpu_begin = time.monotonic(), time.thread_time()
        nvml = _Nvml()
        self._gpu_source = nvml.why
        previous = None
        try:
            while True:
                files = {name: self._read(name) for name in PROC_FILES}
                try:
                    current = reading(time.monotonic(), files, self._rdma())
                except ValueError as exc:  # a number that is not one: that reading only
                    self._left_out.append(left_out(begin, time.monotonic(), str(exc)))
                    current = None
                if previous is not None and current is not None:
                    if (why := went_backwards(previous, current)) is None:
                        self._samples.append(sample_between(begin, previous, current, nvml.read()))
                    else:
                        self._left_out.append(left_out(begin, current.t, why))
                previous = current or previous
                if self._stop.wait(self.interval_s):
                    break
        finally:
            nvml.close()
            self._cpu_s = time.thread_time() - cpu_begin
            self._wall_s = time.monotonic() - begin

    def result(self, host: str) -> Telemetry:
        return Telemetry(
            host=host,
            interval_s=self.interval_s,
            started_at=self._started,
            samples=list(self._samples),
            left_out=list(self._left_out),
            gpu_source=self._gpu_source,
            sampler_cpu_s=round(self._cpu_s, 4),
            sampler_wall_s=round(self._wall_s, 3),
        )
