"""What a text detector reports: one finding, its severity, and the excerpt it quotes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

Severity = Literal["error", "warning"]
Detector = Callable[[str], list["TextFinding"]]

# How much of the text a finding quotes, starting at its offset.
EVIDENCE_CHARS: Final = 80


class TextFinding(BaseModel):
    """One problem a detector saw in a text."""

    model_config = ConfigDict(frozen=True)

    detector: str = Field(description="name of the detector that produced this finding")
    severity: Severity = Field(description="error: the output is broken; warning: suspicious")
    message: str = Field(description="what happened — what it means / how to fix it")
    evidence: str = Field(description=f"up to {EVIDENCE_CHARS} characters from the offset on")
    offset: int = Field(ge=0, description="character offset in the text where the problem starts")


def excerpt(text: str, offset: int) -> str:
    """The evidence a finding quotes: `EVIDENCE_CHARS` characters from `offset` on."""
    return text[offset : offset + EVIDENCE_CHARS]
