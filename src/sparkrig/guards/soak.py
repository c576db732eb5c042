"""The battery, then optionally the margin probe again and again over uptime (a soak)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sparkrig.client import EndpointClient
from sparkrig.guards.baseline import Baseline
from sparkrig.guards.battery import GUARDS, run_battery, run_guard
from sparkrig.guards.context import GuardContext
from sparkrig.guards.receipt import CheckReceipt, save_check_receipt
from sparkrig.guards.verdict import GuardResult

_MARGIN = GUARDS.get("margin")


async def check_with_soak(
    base_url: str,
    repeat_every_s: float | None,
    *,
    show: Callable[[GuardResult], None],
    say: Callable[[str], None],
    **battery: Any,
) -> CheckReceipt:
    """Run the battery; with `repeat_every_s`, rerun the margin probe until interrupted, each
    result appended to the receipt as it comes."""
    say(f"checking {base_url}")
    receipt = await run_battery(base_url, on_result=show, **battery)
    if repeat_every_s is None:
        return receipt
    out_path: Path = battery["out_path"]
    say(f"soak: the margin probe every {repeat_every_s:g}s until Ctrl-C")
    async with EndpointClient(base_url, api_key=battery.get("api_key")) as client:
        context = GuardContext(
            client, receipt.model, receipt.settings, Baseline(model=receipt.model)
        )
        try:
            while True:
                await asyncio.sleep(repeat_every_s)
                result = await run_guard(_MARGIN, context, reraise=False)
                receipt.results.append(result)
                save_check_receipt(receipt, out_path)
                show(result)
        except (KeyboardInterrupt, asyncio.CancelledError):
            say(f"soak stopped after {len(receipt.results)} results; receipt {out_path}")
    return receipt
