"""What every guard returns: a verdict with one line of evidence and the details behind it."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

# WARN: only `check --against` gives it (outputs differ at near-ties only); it fails nothing
GuardVerdict = Literal["PASS", "WARN", "FAIL", "SKIP"]


class GuardResult(BaseModel):
    guard: str = Field(description="the guard's registered name")
    verdict: GuardVerdict = Field(
        description="PASS, WARN, FAIL, or SKIP: not run, or nothing to judge (evidence says why)"
    )
    evidence: str = Field(description="one line: what was seen, or why the guard was skipped")
    details: dict[str, Any] = Field(
        default_factory=dict, description="the measurements behind the verdict, for the receipt"
    )
    seconds: float | None = Field(default=None, description="wall time the guard took")


def passed(guard: str, evidence: str, **details: Any) -> GuardResult:
    return GuardResult(guard=guard, verdict="PASS", evidence=evidence, details=details)


def failed(guard: str, evidence: str, **details: Any) -> GuardResult:
    return GuardResult(guard=guard, verdict="FAIL", evidence=evidence, details=details)


def skipped(guard: str, reason: str, **details: Any) -> GuardResult:
    return GuardResult(guard=guard, verdict="SKIP", evidence=reason, details=details)


def warned(guard: str, evidence: str, **details: Any) -> GuardResult:
    return GuardResult(guard=guard, verdict="WARN", evidence=evidence, details=details)
