"""Scores of capability probes recorded on a known-good server, to judge later runs against.

A weak model passes when it is as good as it was; a config change that makes it worse fails.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from sparkrig.errors import UsageError
from sparkrig.json_files import read_model_file, write_atomically
from sparkrig.paths import state_dir


class Baseline(BaseModel):
    kind: Literal["sparkrig-check-baseline"] = "sparkrig-check-baseline"
    schema_version: Literal[1] = 1
    model: str
    engine: str | None = None
    scores: dict[str, Any] = Field(
        default_factory=dict, description="per guard: what it measured on the reference server"
    )


def default_baseline_path(scope: str, model: str) -> Path:
    """One file per server (its URL, or "embedded") and model under the state folder."""
    key = hashlib.sha256(f"{scope}\n{model}".encode()).hexdigest()[:12]
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in model)[:48]
    return state_dir() / "baselines" / f"{safe}-{key}.json"


def load_baseline(path: Path, model: str) -> Baseline:
    """The baseline at `path`, or an empty one for `model` when there is none yet."""
    if not path.exists() and not path.is_symlink():
        return Baseline(model=model)
    baseline = read_model_file(
        path,
        Baseline,
        what="check baseline",
        kind="sparkrig-check-baseline",
        fix="pass a baseline file with --baseline, or leave --baseline out to use the default",
        damaged_fix="move it aside and record a new one with `sparkrig check --record-baseline`",
    )
    if baseline.model != model:
        raise UsageError(
            f"the baseline {path} was recorded for model {baseline.model}, not {model} — pass "
            "--baseline for this model's file, or record one with --record-baseline"
        )
    return baseline


def save_baseline(baseline: Baseline, path: Path) -> None:
    write_atomically(baseline, path)
