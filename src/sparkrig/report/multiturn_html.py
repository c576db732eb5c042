"""The multiturn point of a bench receipt: its table of turns (TTFT with its interval, the
ratio to turn 1, prompt and cached tokens, cached share), the conversations' hit rates, the
reuse verdict, and a chart of TTFT by turn. The cells are shared with the terminal table
(cli/views/multiturn_table.py), so both say "unverified" the same way."""

from __future__ import annotations

from html import escape

from sparkrig.bench.multiturn_figures import MultiturnFigures, TurnFigures
from sparkrig.bench.point_result import PointResult
from sparkrig.bench.receipt import BenchReceipt
from sparkrig.report.svg_charts import Bar, bar_chart

UNVERIFIED = "unverified"
_DASH = "—"
TURN_COLUMNS = (
    "turn",
    "shape",
    "n",
    "TTFT ms",
    "±95%",
    "vs turn 1",
    "prompt tok",
    "cached tok",
    "cached share",
)
CAPTION = (
    "turn-N TTFT: from turn N's send (once turn N-1 was answered and appended) to its first "
    "token; TTFT ms: median over every conversation of every kept sample, ±: 95% Student-t "
    "half-width of the mean; vs turn 1: median ÷ turn 1's median; prompt / cached tok: medians "
    "of the server's counts (the whole conversation re-sent, and the part its prefix cache "
    "served); cached share: cached ÷ prompt tokens, each summed; unverified: the server gave no "
    "cached count (docs/metrics.md#multiturn)"
)


def turn_cells(turn: TurnFigures) -> list[str]:
    """One turn's row, as text."""
    ttft, spread = turn.ttft_s, _DASH
    if ttft is not None and ttft.ci95_half_width is not None:
        spread = f"±{ttft.ci95_half_width * 1000:.0f}"
    share = UNVERIFIED
    if turn.cached_share is not None:
        share = f"{turn.cached_share:.0%}"
        if turn.reported < turn.requests:
            share += f" ({turn.reported} of {turn.requests} said)"
    return [
        str(turn.turn),
        turn.kind.replace("_", " "),
        str(turn.requests),
        _DASH if ttft is None else f"{ttft.median * 1000:.0f}",
        spread,
        _DASH if turn.ttft_vs_turn_1 is None else f"{turn.ttft_vs_turn_1:.2f}×",
        _DASH if turn.prompt_tokens is None else f"{turn.prompt_tokens.median:.0f}",
        UNVERIFIED if turn.cached_tokens is None else f"{turn.cached_tokens.median:.0f}",
        share,
    ]


def sessions_line(figures: MultiturnFigures) -> str:
    """The conversations' cache-hit rates over turns 2..T, in one sentence."""
    rate = figures.hit_rate
    counted = len(figures.sessions)
    if rate is None:
        return f"per conversation, turns 2..{figures.turns} from the cache: {UNVERIFIED}"
    unknown = counted - rate.n
    return (
        f"per conversation, turns 2..{figures.turns} from the cache: median {rate.median:.0%} "
        f"(min {rate.min:.0%}, max {rate.max:.0%}) over {rate.n} conversations"
        + (f"; {unknown} {UNVERIFIED}" if unknown else "")
    )


def multiturn_section(receipt: BenchReceipt) -> str:
    """Every multiturn point's table, lines and chart; "" when the run had none."""
    settings = receipt.settings
    at_once = settings.parallel_conversations or settings.conversations
    shape = (
        f"each conversation opens with about {settings.opening_tokens} tokens of document "
        f"after its salt; at most {min(at_once, settings.conversations)} conversations at once; "
        f"replies of at most {settings.decode_tokens} tokens"
    )
    parts = [_point(point) for point in receipt.points if point.multiturn is not None]
    if not parts:
        return ""
    return "\n".join(
        ["<h3>multiturn: turn by turn</h3>", f'<p class="muted">{escape(shape)}</p>', *parts]
    )


def _point(point: PointResult) -> str:
    figures = point.multiturn
    assert figures is not None
    head = "".join(f"<th>{escape(column)}</th>" for column in TURN_COLUMNS)
    rows = [
        "<tr>"
        + "".join(
            f'<td class="{"" if index < 2 else "num"}">{escape(cell)}</td>'
            for index, cell in enumerate(turn_cells(turn))
        )
        + "</tr>"
        for turn in figures.per_turn
    ]
    verdict = {"missed": "bad", "unverified": "warn", "reused": ""}[figures.verdict]
    bars = [_ttft_bar(turn) for turn in figures.per_turn]
    chart = bar_chart(f"turn-N TTFT · {point.name}", "turn", "TTFT ms", bars, ".0f")
    return "\n".join(
        [
            f"<p><b>{escape(point.name)}</b></p>",
            f"<table><tr>{head}</tr>{''.join(rows)}</table>",
            f'<p class="muted">{escape(CAPTION)}</p>',
            f"<p>{escape(sessions_line(figures))}</p>",
            f'<p class="{verdict}">{escape(figures.note)}</p>',
            f"<figure>{chart}<figcaption>bar: median TTFT of the turn; whisker: 95% "
            "Student-t interval of the mean</figcaption></figure>",
        ]
    )


def _ttft_bar(turn: TurnFigures) -> Bar:
    """A turn's median TTFT (ms), its whisker the 95% interval of the mean (from 0 at least)."""
    ttft = turn.ttft_s
    if ttft is None:
        return Bar(str(turn.turn), "no data")
    if ttft.ci95_low is None or ttft.ci95_high is None:
        return Bar(str(turn.turn), ttft.median * 1000)
    return Bar(
        str(turn.turn), ttft.median * 1000, max(ttft.ci95_low, 0.0) * 1000, ttft.ci95_high * 1000
    )
