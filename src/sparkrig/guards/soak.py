"""The battery, then optionally the margin and drift probes again and again over uptime (a
soak); each drift repeat is compared with the probes taken when the battery opened."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sparkrig.client import EndpointClient
from sparkrig.guards.baseline import Baseline
from sparkrig.guards.battery import GUARDS, run_battery, run_guard, run_opening
from sparkrig.guards.context import GuardContext
from sparkrig.guards.receipt import CheckReceipt, save_check_receipt
from sparkrig.guards.verdict import GuardResult

_REPEATED = tuple(entry for entry in GUARDS.entries() if entry.name in ("margin", "drift"))


async def check_with_soak(
    base_url: str,
    repeat_every_s: float | None,
    *,
    show: Callable[[GuardResult], None],
    say: Callable[[str], None],
    **battery: Any,
) -> CheckReceipt:
    """Run the battery; with `repeat_every_s`, rerun the margin and drift probes until
    interrupted, each result appended to the receipt as it comes. Drift compares every repeat
    with the set taken when the battery opened (taken after it, when the battery ran no drift)."""
    say(f"checking {base_url}")
    openings: dict[str, Any] = {}
    receipt = await run_battery(base_url, on_result=show, openings=openings, **battery)
    if repeat_every_s is None:
        return receipt
    out_path: Path = battery["out_path"]
    say(f"soak: the margin and drift probes every {repeat_every_s:g}s until Ctrl-C")
    async with EndpointClient(base_url, api_key=battery.get("api_key")) as client:
        context = GuardContext(
            client, receipt.model, receipt.settings, Baseline(model=receipt.model)
        )
        context.openings = openings
        try:
            for entry in _REPEATED:
                if entry.opening is not None and entry.name not in openings:
                    await run_opening(entry, context, reraise=False)
            while True:
                await asyncio.sleep(repeat_every_s)
                for entry in _REPEATED:
                    result = await run_guard(entry, context, reraise=False)
                    receipt.results.append(result)
                    save_check_receipt(receipt, out_path)
                    show(result)
        except (KeyboardInterrupt, asyncio.CancelledError):
            say(f"soak stopped after {len(receipt.results)} results; receipt {out_path}")
    return receipt
