"""How long the server sat idle before a bench run, where that can be known, and a warning when
it is longer than the warm state lasts.

Neither engine says when it last served a request. What can be read: the server's generated-
token counter (llama.cpp `tokens_predicted_total`, vLLM `generation_tokens_total`), its process
start time where it exports one (vLLM), and sparkrig's own note of when its last bench against
this URL ended and what the counter read then (under the state folder, `activity/`). So:

- the counter reads as it did when sparkrig's last run ended (same process): nobody used the
  server since, and it has been idle since that run ended;
- the counter reads 0 and the process start time is known: it never served a request since it
  started, and it has sat idle (and cold) since then;
- otherwise (no /metrics, no note, the counter moved, the server restarted): not known.

A gap over `defaults.BENCH_WARM_DECAY_S` (the field's warm state decayed after 30 minutes idle,
docs/field-notes.md#warmup-penalty) without `--warmup-steady` becomes a receipt warning.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

from pydantic import BaseModel, Field

from sparkrig import defaults
from sparkrig.client.metrics import PROCESS_START, MetricsSnapshot
from sparkrig.engines.metric_map import Quantity
from sparkrig.errors import SparkrigError
from sparkrig.json_files import read_model_file, write_atomically
from sparkrig.paths import state_dir


class ActivityNote(BaseModel):
    """What sparkrig saw of a server when its last bench against it ended."""

    base_url: str
    ended_at: float = Field(description="Unix seconds when the run ended")
    generated_tokens: float | None = Field(
        description="the server's generated-token counter then; None without /metrics"
    )
    process_start: float | None = Field(
        default=None, description="the server's process start time then, where it exports one"
    )


class IdleGap(BaseModel):
    idle_s: float | None = Field(description="seconds idle before the run; unset: not known")
    fresh: bool = Field(
        default=False, description="the counter reads 0: it has served nothing since it started"
    )
    basis: str = Field(description="how it was known, or why it is not")
    decay_s: float = Field(description="the idle time after which the warm state decays")
    over_decay: bool | None = Field(description="idle_s > decay_s; unset when not known")


def activity_path(base_url: str) -> Path:
    digest = hashlib.sha256(base_url.rstrip("/").encode()).hexdigest()[:16]
    return state_dir() / "activity" / f"{digest}.json"


def _generated(snapshot: MetricsSnapshot | None) -> float | None:
    value = snapshot.read(Quantity.GENERATED_TOKENS) if snapshot is not None else None
    return value if isinstance(value, float | int) else None


def _process_start(snapshot: MetricsSnapshot | None) -> float | None:
    samples = snapshot.samples.get(PROCESS_START, []) if snapshot is not None else []
    return samples[0].value if len(samples) == 1 else None


def note_activity(
    base_url: str, snapshot: MetricsSnapshot | None, now: float | None = None
) -> None:
    """Remember the end of a run against `base_url`; a state folder that cannot be written
    loses only the note."""
    note = ActivityNote(
        base_url=base_url.rstrip("/"),
        ended_at=time.time() if now is None else now,
        generated_tokens=_generated(snapshot),
        process_start=_process_start(snapshot),
    )
    try:
        write_atomically(note, activity_path(base_url))
    except OSError:
        return


def _last_note(base_url: str) -> ActivityNote | None:
    path = activity_path(base_url)
    if not path.is_file():
        return None
    try:
        return read_model_file(path, ActivityNote, what="activity note", fix="delete it")
    except (SparkrigError, OSError):
        return None  # a damaged note says nothing, and the run does not fail for it


def idle_gap(
    base_url: str,
    snapshot: MetricsSnapshot | None,
    *,
    now: float | None = None,
    decay_s: float = defaults.BENCH_WARM_DECAY_S,
) -> IdleGap:
    """The gap before this run from the server's counters and sparkrig's last note."""
    now = time.time() if now is None else now
    generated, started = _generated(snapshot), _process_start(snapshot)
    since, basis = _idle_since(base_url, generated, started)
    idle = None if since is None else max(now - since, 0.0)
    return IdleGap(
        idle_s=idle,
        fresh=generated == 0,
        basis=basis,
        decay_s=decay_s,
        over_decay=None if idle is None else idle > decay_s,
    )


def _idle_since(
    base_url: str, generated: float | None, started: float | None
) -> tuple[float | None, str]:
    """Since when (Unix seconds) the server has been idle, and how that is known."""
    if generated is None:
        return None, "not known: the server exports no generated-token counter on /metrics"
    if generated == 0:
        exported = "" if started is not None else " (start time not exported)"
        return started, f"it has generated nothing since it started{exported}"
    note = _last_note(base_url)
    if note is None or note.generated_tokens is None:
        return None, "not known: no earlier sparkrig bench against this URL to compare with"
    if started is not None and note.process_start is not None and started != note.process_start:
        return None, "not known: the server restarted since sparkrig's last bench"
    if generated != note.generated_tokens:
        return None, "not known: the server generated tokens since sparkrig's last bench"
    return note.ended_at, "no tokens generated since sparkrig's last bench ended"


def idle_warning(gap: IdleGap, warmup_steady: bool) -> str | None:
    """A receipt warning when the server sat idle past the decay and no steady warm-up ran."""
    if warmup_steady:
        return None
    if gap.fresh:
        return (
            "the server has served nothing since it started: a fresh engine decoded about 30% "
            "slow for its first requests in the field, and short warm-ups did not remove it "
            "(docs/field-notes.md#warmup-penalty) — rerun with --warmup-steady"
        )
    if not gap.over_decay or gap.idle_s is None:
        return None
    return (
        f"the server sat idle {gap.idle_s / 60:.0f} min before this run ({gap.basis}), past "
        f"the {gap.decay_s / 60:.0f} min after which the field's warm state decayed "
        "(docs/field-notes.md#warmup-penalty): its first points may read slow — rerun with "
        "--warmup-steady"
    )
