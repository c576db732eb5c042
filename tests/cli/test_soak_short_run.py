"""`sparkrig soak` says a run shorter than the reports' earliest failure is a check, not a soak
(docs/field-notes.md#soak-default-is-a-check), against a real local stand-in server."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

from tests.conftest import SPARKRIG
from tests.gateway.fake_upstream import FakeUpstream, serve_fake


async def test_a_short_soak_says_it_was_a_check_and_how_long_a_soak_runs(tmp_path: Path) -> None:
    upstream = FakeUpstream(reply_for=lambda body: "A plain reply of a few words.")
    async with serve_fake(upstream) as url:
        process = await asyncio.create_subprocess_exec(
            SPARKRIG,
            "soak",
            url,
            "--model",
            "m",
            "--duration",
            "2",
            "--window",
            "1",
            "--receipt",
            str(tmp_path / "soak.json"),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        out, _ = await asyncio.wait_for(process.communicate(), 60)
    text = " ".join(out.decode().split())
    assert "2 s (0 min) checks the traffic, not a soak" in text
    assert "rank die after 1.5 hours" in text
    assert "run --duration 21600 or more for a soak" in text
