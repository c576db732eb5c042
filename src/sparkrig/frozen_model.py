"""The one strict, frozen pydantic base for models that are declared once and never edited:
cluster and serving files, fabric plans and steps, executor and launch specs, reasoning
families, doctor findings. tests/test_frozen_model.py fails on a class that writes this config
out again instead of subclassing it.

`extra="forbid"` makes a misspelt key in a user's file an error rather than a silently ignored
setting; `frozen=True` lets a plan or a finding be shared without a copy."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class FrozenModel(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
