"""What each vLLM release accepts, learnt from the release itself and committed beside this file
(vllm-X.Y.Z.json, written by `scripts/vllm-knowledge`): every `vllm serve` flag with its choices
and default, and what vLLM's own CUDA-graph sizing code makes of a grid of (max_num_seqs, k,
explicit max_cudagraph_capture_size). Read with no network and no vLLM install.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from sparkrig.errors import ConfigError
from sparkrig.outside_numbers import int_or_none


@dataclass(frozen=True)
class FlagSpec:
    """One `vllm serve` option as vLLM's parser declares it."""

    options: tuple[str, ...]
    dest: str
    takes_value: bool
    choices: tuple[str, ...] | None
    default: Any


@dataclass(frozen=True)
class CaptureRow:
    """vLLM's answer for one grid point: the sizes it captures, or the error it raises."""

    max_num_seqs: int
    k: int
    explicit: int | None
    sizes: tuple[int, ...]
    error: str | None


@dataclass(frozen=True)
class VllmKnowledge:
    version: str
    provenance: dict[str, Any]
    flags: dict[str, FlagSpec]  # every option string (--x and its aliases) -> its spec
    capture_rows: tuple[CaptureRow, ...]
    capture_batched_tokens: int
    reasoning_parsers: tuple[str, ...]

    def default(self, dest: str) -> Any:
        return next((f.default for f in self.flags.values() if f.dest == dest), None)

    def capture_row(self, seqs: int, k: int, explicit: int | None) -> CaptureRow | None:
        return next(
            (
                r
                for r in self.capture_rows
                if (r.max_num_seqs, r.k, r.explicit) == (seqs, k, explicit)
            ),
            None,
        )


def version_key(version: str) -> tuple[int, ...]:
    """0.30.0 -> (0, 30, 0): releases compared as numbers, not text."""
    parts = (int_or_none(part, minimum=0) for part in version.split("."))
    return tuple(part for part in parts if part is not None)


@cache
def known_versions() -> tuple[str, ...]:
    """Every release with committed data, oldest first."""
    names = [
        entry.name.removeprefix("vllm-").removesuffix(".json")
        for entry in resources.files(__name__).iterdir()
        if entry.name.startswith("vllm-") and entry.name.endswith(".json")
    ]
    return tuple(sorted(names, key=version_key))


def resolve_version(wanted: str) -> str:
    """An exact release, or "0.30" for the newest 0.30.x with data."""
    versions = known_versions()
    if wanted in versions:
        return wanted
    series = [v for v in versions if v.startswith(f"{wanted}.")]
    if series:
        return series[-1]
    raise ConfigError(
        f"no vLLM knowledge for version {wanted!r} (sparkrig has {', '.join(versions)}) — set "
        "engine.version to one of those, or run scripts/vllm-knowledge for that release"
    )


@cache
def knowledge_for(wanted: str) -> VllmKnowledge:
    version = resolve_version(wanted)
    raw = json.loads(
        resources.files(__name__).joinpath(f"vllm-{version}.json").read_text(encoding="utf-8")
    )
    flags: dict[str, FlagSpec] = {}
    for row in raw["flags"]:
        spec = FlagSpec(
            options=tuple(row["options"]),
            dest=row["dest"],
            takes_value=row["takes_value"],
            choices=None if row["choices"] is None else tuple(row["choices"]),
            default=row["default"],
        )
        flags |= dict.fromkeys(spec.options, spec)
    rows = tuple(
        CaptureRow(
            max_num_seqs=r["max_num_seqs"],
            k=r["k"],
            explicit=r["explicit"],
            sizes=tuple(r.get("sizes", ())),
            error=r.get("error"),
        )
        for r in raw["capture_grid"]["rows"]
    )
    return VllmKnowledge(
        version=version,
        provenance=raw["provenance"],
        flags=flags,
        capture_rows=rows,
        capture_batched_tokens=raw["capture_grid"]["max_num_batched_tokens"],
        reasoning_parsers=tuple(raw.get("reasoning_parsers", ())),
    )


def version_default(wanted: str, dest: str) -> Any:
    """vLLM's default for one option in that release, or None where sparkrig has no data."""
    try:
        return knowledge_for(wanted).default(dest)
    except ConfigError:
        return None
