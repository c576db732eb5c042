"""Inline SVG charts for the HTML report: pure functions from numbers to SVG text.

No script, font file or URL, so the page opens offline. A number draws a bar; text such as
"invalid" is written where the bar would be, so a measurement that is not valid never looks like
one. Every piece of text is escaped.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape

WIDTH, HEIGHT = 640, 300
_LEFT, _RIGHT, _TOP, _BOTTOM = 64, 16, 56, 52
_PLOT_W = WIDTH - _LEFT - _RIGHT
_PLOT_H = HEIGHT - _TOP - _BOTTOM
PALETTE = ("#4c78a8", "#f58518", "#54a24b", "#b279a2", "#e45756", "#72b7b2")
_INK, _GRID, _NOTE = "#333", "#e4e4e4", "#b00020"
_CHAR_PX = 6.2  # rough width of one 11 px character, to truncate and place text
_HEADROOM = 1.1  # room above the tallest bar for its value label

Cell = float | str  # a number draws a bar; text is written in the bar's place


@dataclass(frozen=True)
class Bar:
    label: str
    value: Cell
    low: float | None = None  # the whisker, e.g. the 95 % interval
    high: float | None = None


@dataclass(frozen=True)
class Series:
    name: str
    values: Sequence[Cell]  # one per category


def _text(
    x: float,
    y: float,
    content: str,
    *,
    size: int = 11,
    anchor: str = "middle",
    fill: str = _INK,
    extra: str = "",
) -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" '
        f'fill="{fill}"{extra}>{escape(content)}</text>'
    )


def _fit(label: str, width_px: float) -> str:
    limit = max(3, int(width_px / _CHAR_PX))
    return label if len(label) <= limit else label[: limit - 1] + "…"


def _nice_scale(largest: float) -> tuple[float, float]:
    """An axis top at or above `largest` and a round tick step (1, 2, 2.5 or 5 × 10^k)."""
    if not math.isfinite(largest) or largest <= 0:
        return 1.0, 0.2
    raw = largest / 5
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(f * magnitude for f in (1, 2, 2.5, 5, 10) if raw <= f * magnitude * (1 + 1e-9))
    return math.ceil(largest / step - 1e-9) * step, step


def _y(value: float, top: float) -> float:
    return _TOP + _PLOT_H * (1 - min(max(value, 0.0), top) / top)


def _frame(
    title: str, x_label: str, y_label: str, *, scale: tuple[float, float], categories: Sequence[str]
) -> list[str]:
    """The SVG opening, title, grid, axes and category labels of one chart."""
    top, step = scale
    parts = [
        f'<svg viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" role="img" '
        f'aria-label="{escape(title)}" font-family="system-ui, sans-serif">',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="#fff"/>',
        _text(_LEFT, 20, title, size=14, anchor="start", extra=' font-weight="600"'),
    ]
    decimals = max(0, -math.floor(math.log10(step) + 1e-9)) if step < 1 else 0
    for index in range(round(top / step) + 1):
        tick = index * step
        y = _y(tick, top)
        parts.append(
            f'<line x1="{_LEFT}" x2="{WIDTH - _RIGHT}" y1="{y:.1f}" y2="{y:.1f}" stroke="{_GRID}"/>'
        )
        parts.append(_text(_LEFT - 6, y + 4, f"{tick:.{decimals}f}", anchor="end"))
    bottom = _TOP + _PLOT_H
    parts.append(
        f'<line x1="{_LEFT}" x2="{WIDTH - _RIGHT}" y1="{bottom}" y2="{bottom}" stroke="{_INK}"/>'
    )
    parts.append(f'<line x1="{_LEFT}" x2="{_LEFT}" y1="{_TOP}" y2="{bottom}" stroke="{_INK}"/>')
    slot = _PLOT_W / max(len(categories), 1)
    for index, category in enumerate(categories):
        parts.append(_text(_LEFT + slot * (index + 0.5), bottom + 16, _fit(category, slot)))
    parts.append(_text(_LEFT + _PLOT_W / 2, HEIGHT - 8, x_label))
    middle = _TOP + _PLOT_H / 2
    parts.append(_text(16, middle, y_label, extra=f' transform="rotate(-90 16 {middle:.1f})"'))
    return parts


def _legend(names: Sequence[str]) -> list[str]:
    parts, x = [], float(WIDTH - _RIGHT)
    for index in reversed(range(len(names))):
        x -= len(names[index]) * _CHAR_PX + 26
        colour = PALETTE[index % len(PALETTE)]
        parts.append(f'<rect x="{x:.1f}" y="28" width="10" height="10" fill="{colour}"/>')
        parts.append(_text(x + 14, 37, names[index], anchor="start"))
    return parts


def _cell(
    x: float,
    width: float,
    cell: Cell,
    *,
    top: float,
    colour: str,
    label_format: str,
    tooltip: str,
    whisker: tuple[float, float] | None = None,
) -> list[str]:
    """One bar (or the text standing in for it), its whisker and value label, and a tooltip."""
    bottom = float(_TOP + _PLOT_H)
    centre = x + width / 2
    parts = [f"<g><title>{escape(tooltip)}</title>"]
    if isinstance(cell, str):
        if width >= len(cell) * _CHAR_PX:
            parts.append(_text(centre, bottom - 8, cell, fill=_NOTE, extra=' font-style="italic"'))
        else:  # a narrow slot: write it upwards from the axis
            base = bottom - 6
            rotate = f' font-style="italic" transform="rotate(-90 {centre + 4:.1f} {base})"'
            parts.append(_text(centre + 4, base, cell, fill=_NOTE, anchor="start", extra=rotate))
        parts.append("</g>")
        return parts
    y = _y(cell, top)
    parts.append(
        f'<rect x="{x:.1f}" y="{y:.1f}" width="{width:.1f}" height="{bottom - y:.1f}" '
        f'fill="{colour}"/>'
    )
    label_y = y
    if whisker is not None:
        y_low, y_high = _y(whisker[0], top), _y(whisker[1], top)
        parts.append(
            f'<path d="M{centre:.1f} {y_low:.1f}V{y_high:.1f}M{centre - 6:.1f} {y_low:.1f}h12'
            f'M{centre - 6:.1f} {y_high:.1f}h12" stroke="{_INK}" fill="none"/>'
        )
        label_y = min(y, y_high)
    if width >= 22:
        parts.append(_text(centre, label_y - 4, format(cell, label_format), size=10))
    parts.append("</g>")
    return parts


def bar_chart(
    title: str, x_label: str, y_label: str, bars: Sequence[Bar], label_format: str = ".1f"
) -> str:
    """One bar per label, with a whisker from `low` to `high` where both are given."""
    # text cells (an invalid point) must not stretch the axis, or it would hint at their value
    numeric = [bar for bar in bars if not isinstance(bar.value, str)]
    heights = [v for bar in numeric for v in (bar.value, bar.high) if isinstance(v, float | int)]
    top, step = _nice_scale(max(heights, default=0.0) * _HEADROOM)
    labels = [bar.label for bar in bars]
    parts = _frame(title, x_label, y_label, scale=(top, step), categories=labels)
    slot = _PLOT_W / max(len(bars), 1)
    width = slot * 0.6
    for index, bar in enumerate(bars):
        x = _LEFT + slot * index + (slot - width) / 2
        shown = bar.value if isinstance(bar.value, str) else format(bar.value, label_format)
        tooltip = f"{bar.label}: {shown}"
        whisker = None
        if bar.low is not None and bar.high is not None and not isinstance(bar.value, str):
            whisker = (bar.low, bar.high)
            tooltip += f", 95% interval {bar.low:{label_format}}–{bar.high:{label_format}}"
        parts += _cell(
            x,
            width,
            bar.value,
            top=top,
            colour=PALETTE[0],
            label_format=label_format,
            tooltip=tooltip,
            whisker=whisker,
        )
    parts.append("</svg>")
    return "\n".join(parts)


def grouped_bar_chart(
    title: str,
    x_label: str,
    y_label: str,
    categories: Sequence[str],
    series: Sequence[Series],
    *,
    top: float | None = None,
    label_format: str = ".1f",
) -> str:
    """Bars side by side per category, one colour per series, with a legend; `top` fixes the
    axis (1.0 for rates), otherwise it fits the data."""
    values = [v for one in series for v in one.values if isinstance(v, float | int)]
    axis_top, step = (
        (top, top / 5) if top is not None else _nice_scale(max(values, default=0.0) * _HEADROOM)
    )
    parts = _frame(title, x_label, y_label, scale=(axis_top, step), categories=categories)
    parts += _legend([one.name for one in series])
    slot = _PLOT_W / max(len(categories), 1)
    width = slot * 0.8 / max(len(series), 1)
    for s_index, one in enumerate(series):
        colour = PALETTE[s_index % len(PALETTE)]
        for c_index, (category, cell) in enumerate(zip(categories, one.values, strict=True)):
            x = _LEFT + slot * c_index + slot * 0.1 + width * s_index
            shown = cell if isinstance(cell, str) else format(cell, label_format)
            parts += _cell(
                x,
                width,
                cell,
                top=axis_top,
                colour=colour,
                label_format=label_format,
                tooltip=f"{one.name}, {category}: {shown}",
            )
    parts.append("</svg>")
    return "\n".join(parts)


def _at(rates: Sequence[float] | str, index: int) -> Cell:
    if isinstance(rates, str):
        return rates
    return rates[index] if index < len(rates) else "—"


def position_chart(title: str, rates: Mapping[str, Sequence[float] | str]) -> str:
    """Acceptance rate (0..1) per draft position, one series per label (content type); a label
    mapped to text (e.g. "invalid") shows that text at every position."""
    positions = max((len(r) for r in rates.values() if not isinstance(r, str)), default=1)
    categories = [f"position {index}" for index in range(positions)]
    series = [
        Series(label, [_at(value, index) for index in range(positions)])
        for label, value in rates.items()
    ]
    return grouped_bar_chart(
        title,
        "draft position (0 = first drafted token)",
        "accepted ÷ drafts",
        categories,
        series,
        top=1.0,
        label_format=".2f",
    )


_MEETS, _FAILS = "#2e7d32", "#b00020"


def limit_chart(
    title: str,
    x_label: str,
    y_label: str,
    categories: Sequence[str],
    values: Sequence[Cell],
    *,
    limit: float,
    limit_label: str,
    label_format: str = ".0f",
) -> str:
    """A curve over ordered categories (loads) against a horizontal limit: a marker per value,
    green at or under the limit and red above it, joined where neighbours are both numbers; text
    (an invalid point) is written in a value's place. The axis always shows the limit."""
    numbers = [v for v in values if not isinstance(v, str)]
    top, step = _nice_scale(max([*numbers, limit], default=limit) * _HEADROOM)
    parts = _frame(title, x_label, y_label, scale=(top, step), categories=categories)
    slot = _PLOT_W / max(len(categories), 1)
    y_limit = _y(limit, top)
    parts.append(
        f'<line x1="{_LEFT}" x2="{WIDTH - _RIGHT}" y1="{y_limit:.1f}" y2="{y_limit:.1f}" '
        f'stroke="{_FAILS}" stroke-dasharray="6 4"/>'
    )
    parts.append(_text(WIDTH - _RIGHT - 4, y_limit - 5, limit_label, anchor="end", fill=_FAILS))
    previous: tuple[float, float] | None = None
    for index, (category, cell) in enumerate(zip(categories, values, strict=True)):
        centre = _LEFT + slot * (index + 0.5)
        if isinstance(cell, str):
            parts += _cell(
                centre - slot * 0.3,
                slot * 0.6,
                cell,
                top=top,
                colour=_INK,
                label_format=label_format,
                tooltip=f"{category}: {cell}",
            )
            previous = None
            continue
        y = _y(cell, top)
        if previous is not None:
            parts.append(
                f'<line x1="{previous[0]:.1f}" y1="{previous[1]:.1f}" x2="{centre:.1f}" '
                f'y2="{y:.1f}" stroke="{PALETTE[0]}" stroke-width="2"/>'
            )
        colour = _MEETS if cell <= limit else _FAILS
        shown = format(cell, label_format)
        parts.append(
            f"<g><title>{escape(f'{category}: {shown} (limit {limit_label})')}</title>"
            f'<circle cx="{centre:.1f}" cy="{y:.1f}" r="5" fill="{colour}"/>'
            + _text(centre, y - 9, shown, size=10)
            + "</g>"
        )
        previous = (centre, y)
    parts.append("</svg>")
    return "\n".join(parts)
