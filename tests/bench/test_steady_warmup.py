"""A warm-up that never steadies says so and stops at its bound; a failing request is counted,
not taken for a rate. The server is stood in for by a sender whose rates keep swinging (the live
slow-start case is in test_warmup_live.py)."""

from __future__ import annotations

from itertools import count
from types import SimpleNamespace
from typing import Any

import pytest

from sparkrig import defaults
from sparkrig.bench import steady_warmup as module
from sparkrig.bench.settings import BenchSettings


async def test_a_warmup_whose_rate_keeps_swinging_never_claims_steady(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    turns, rates = count(), count()

    async def swinging(_client: Any, _requests: Any) -> tuple[list[Any], None]:
        if next(turns) == 3:  # one request fails: not a rate
            return [SimpleNamespace(error="timeout", decode_tps=None)], None
        return [SimpleNamespace(error=None, decode_tps=50.0 if next(rates) % 2 else 100.0)], None

    monkeypatch.setattr(module, "send_in_process", swinging)
    result = await module.steady_warmup(None, "m", BenchSettings(warmup_steady=True))  # type: ignore[arg-type]
    assert not result.steady
    assert len(result.rates) == defaults.BENCH_STEADY_MAX_REQUESTS - 1  # the bound, one failed
    assert "did not steady" in result.note
    assert "1 failed" in result.note
