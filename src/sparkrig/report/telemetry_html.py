"""The telemetry of a bench run in the HTML report: line charts of CPU, memory, network and, where
NVML answered, GPU clocks, power and temperature over the run, beside the figures they explain.
Pure: a `Telemetry` in, HTML text out."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from sparkrig.doctor.telemetry_model import Telemetry, TelemetryRecord
from sparkrig.report.svg_charts import PALETTE

WIDTH, HEIGHT = 640, 220
_LEFT, _RIGHT, _TOP, _BOTTOM = 64, 16, 40, 36
_PLOT_W, _PLOT_H = WIDTH - _LEFT - _RIGHT, HEIGHT - _TOP - _BOTTOM


def line_chart(
    title: str, unit: str, times: Sequence[float], series: dict[str, Sequence[float | None]]
) -> str:
    """One line per series over `times` (seconds); a None is a gap."""
    values = [v for line in series.values() for v in line if v is not None]
    top = max(values, default=0.0) * 1.1 or 1.0
    end = max(times, default=0.0) or 1.0
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(title)}">',
        f'<text x="{WIDTH / 2}" y="18" font-size="13" text-anchor="middle">{escape(title)}</text>',
        f'<line x1="{_LEFT}" y1="{_TOP + _PLOT_H}" x2="{_LEFT + _PLOT_W}" y2="{_TOP + _PLOT_H}" '
        'stroke="#999"/>',
        f'<text x="{_LEFT - 6}" y="{_TOP + 4}" font-size="11" text-anchor="end">'
        f"{top:.3g} {escape(unit)}</text>",
        f'<text x="{_LEFT - 6}" y="{_TOP + _PLOT_H}" font-size="11" text-anchor="end">0</text>',
        f'<text x="{_LEFT + _PLOT_W}" y="{HEIGHT - 12}" font-size="11" text-anchor="end">'
        f"{end:.0f} s</text>",
    ]
    for index, (name, line) in enumerate(series.items()):
        color = PALETTE[index % len(PALETTE)]
        points = " ".join(
            f"{_LEFT + _PLOT_W * t / end:.1f},{_TOP + _PLOT_H * (1 - v / top):.1f}"
            for t, v in zip(times, line, strict=True)
            if v is not None
        )
        parts.append(
            f'<polyline fill="none" stroke="{color}" stroke-width="1.5" points="{points}"/>'
        )
        parts.append(
            f'<text x="{_LEFT + 8 + 150 * index}" y="{HEIGHT - 12}" font-size="11" '
            f'fill="{color}">{escape(name)}</text>'
        )
    parts.append("</svg>")
    return "\n".join(parts)


def _host_section(telemetry: Telemetry) -> str:
    samples = telemetry.samples
    if not samples:
        return (
            f'<h4>{escape(telemetry.host)}</h4>\n<p class="muted">no sample (the run was shorter '
            "than two intervals)</p>"
        )
    times = [s.t_s for s in samples]
    mib = 1024**2
    charts = [
        line_chart("CPU busy, all cores", "%", times, {"cpu": [s.cpu_percent for s in samples]}),
        line_chart(
            "memory used", "GiB", times, {"used": [s.memory_used_bytes / 1024**3 for s in samples]}
        ),
        line_chart(
            "swap",
            "pages/s",
            times,
            {
                "in": [s.swap_in_pages_s for s in samples],
                "out": [s.swap_out_pages_s for s in samples],
            },
        ),
        line_chart(
            "network, all interfaces",
            "MiB/s",
            times,
            {
                "rx": [sum(s.net_rx_bytes_s.values()) / mib for s in samples],
                "tx": [sum(s.net_tx_bytes_s.values()) / mib for s in samples],
            },
        ),
    ]
    if any(s.rdma_rx_bytes_s for s in samples):
        charts.append(
            line_chart(
                "RDMA, all ports",
                "MiB/s",
                times,
                {
                    "rx": [sum(s.rdma_rx_bytes_s.values()) / mib for s in samples],
                    "tx": [sum(s.rdma_tx_bytes_s.values()) / mib for s in samples],
                    "RoCE errors (count)": [float(sum(s.roce_errors.values())) for s in samples],
                },
            )
        )
    gpus = sorted({g.index for s in samples for g in s.gpus})
    for index in gpus:

        def field(name: str, index: int = index) -> list[float | None]:
            values = []
            for sample in samples:
                gpu = next((g for g in sample.gpus if g.index == index), None)
                value = getattr(gpu, name) if gpu is not None else None
                values.append(float(value) if value is not None else None)
            return values

        charts.append(
            line_chart(
                f"GPU {index} clocks",
                "MHz",
                times,
                {"SM": field("sm_clock_mhz"), "memory": field("mem_clock_mhz")},
            )
        )
        charts.append(
            line_chart(
                f"GPU {index} power and temperature",
                "W / °C",
                times,
                {"power W": field("power_w"), "temp °C": field("temperature_c")},
            )
        )
    cost = (
        f"sampled every {telemetry.interval_s:g} s on {escape(telemetry.host)}; the sampler itself "
        f"used {telemetry.sampler_cpu_s * 1000:.0f} ms of CPU over "
        f"{telemetry.sampler_wall_s:.0f} s "
        f"({telemetry.sampler_cpu_percent:.2f}% of one core). GPU: {escape(telemetry.gpu_source)}"
    )
    figures = "\n".join(f"<figure>{svg}</figure>" for svg in charts)
    return (
        f'<h4>{escape(telemetry.host)}</h4>\n<p class="muted">{cost}</p>\n'
        f'<div class="charts">\n{figures}\n</div>'
    )


def telemetry_section(record: TelemetryRecord) -> str:
    """Every host of the record, this one first, and any node whose sampler failed."""
    problems = "".join(f'<p class="muted">{escape(p)}</p>\n' for p in record.problems)
    hosts = "\n".join(_host_section(t) for t in record.hosts)
    return f"<h3>telemetry</h3>\n{problems}{hosts}"
