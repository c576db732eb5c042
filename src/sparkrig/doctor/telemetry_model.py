"""What the telemetry samplers record, as data: per-second samples of a host, one host's
telemetry, and the record beside a receipt. Models only, so the HTML report can draw them
without importing the samplers (`telemetry.py`, `node_telemetry.py`, `telemetry_record.py`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class GpuSample(BaseModel):
    index: int
    sm_clock_mhz: int | None = None
    mem_clock_mhz: int | None = None
    power_w: float | None = None
    temperature_c: int | None = None
    utilization_percent: int | None = None
    clock_event_reasons: int | None = Field(default=None, description="NVML bit mask; 1 = idle")


class TelemetrySample(BaseModel):
    t_s: float = Field(description="seconds since the sampler started")
    cpu_percent: float = Field(description="busy share of all CPUs since the previous sample")
    memory_used_bytes: int = Field(description="MemTotal - MemAvailable")
    swap_in_pages_s: float
    swap_out_pages_s: float
    net_rx_bytes_s: dict[str, float] = Field(description="per interface (lo left out)")
    net_tx_bytes_s: dict[str, float]
    rdma_rx_bytes_s: dict[str, float] = Field(
        default_factory=dict, description="per RDMA port (`device/port`), from port_rcv_data"
    )
    rdma_tx_bytes_s: dict[str, float] = Field(default_factory=dict)
    roce_errors: dict[str, int] = Field(
        default_factory=dict,
        description="per RDMA port, the rise of roce_adp_retrans + packet_seq_err + "
        "out_of_sequence since the previous sample (field notes: RoCE retransmits)",
    )
    gpus: list[GpuSample] = Field(default_factory=list)


class Telemetry(BaseModel):
    version: Literal[1] = 1
    host: str
    interval_s: float
    started_at: float = Field(description="unix time of the first sample")
    samples: list[TelemetrySample]
    left_out: list[str] = Field(
        default_factory=list,
        description="each moment with no sample, and why: a counter or the clock that went "
        "backwards (a reset), a number the host wrote that is not one",
    )
    gpu_source: str = Field(description="`nvml`, or why there are no GPU figures")
    sampler_cpu_s: float = Field(description="CPU time the sampler thread itself used")
    sampler_wall_s: float

    @property
    def sampler_cpu_percent(self) -> float:
        """The sampler's own cost, as a share of one CPU."""
        return 100 * self.sampler_cpu_s / self.sampler_wall_s if self.sampler_wall_s else 0.0


class TelemetryRecord(BaseModel):
    version: Literal[1] = 1
    hosts: list[Telemetry]
    problems: list[str] = []
    """a node whose sampler could not start or stop: `what happened — how to fix it`"""
