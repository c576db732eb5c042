"""`sparkrig stall URL`: two /metrics scrapes a window apart; a stall is requests running while
no token counter moves. Exit 1 on a stall, an error when the engine says nothing to judge by."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Annotated

import typer

from sparkrig import defaults
from sparkrig.cli.common import WAIT_SECONDS, JsonFlag, app, console, print_json, ranged
from sparkrig.errors import EndpointError

if TYPE_CHECKING:
    from sparkrig.client.metrics import MetricsSnapshot


@app.command()
def stall(
    url: Annotated[str, typer.Argument(help="base URL of the server (its /metrics is read)")],
    window: Annotated[
        float, ranged("seconds between the two scrapes", WAIT_SECONDS)
    ] = defaults.STALL_CHECK_WINDOW_S,
    as_json: JsonFlag = False,
) -> None:
    """Is a serving engine stalled? Requests running but its token counters still."""
    from sparkrig.client.probe import scrape_once
    from sparkrig.client.serving_stall import serving_stall

    async def scrape_twice() -> tuple[MetricsSnapshot, MetricsSnapshot]:
        before = await scrape_once(url)
        await asyncio.sleep(window)
        return before, await scrape_once(url)

    before, after = asyncio.run(scrape_twice())
    verdict = serving_stall(before, after)
    if verdict.state == "unknown":
        raise EndpointError(f"{url}: {verdict.message} — point it at a vLLM or llama.cpp server")
    if as_json:
        print_json(verdict.model_dump())
    else:
        style = {"stalled": "red", "moving": "green"}.get(verdict.state, "")
        console.print(
            f"[{style or 'default'}]{verdict.state}[/]: {verdict.message}", highlight=False
        )
    if verdict.state == "stalled":
        raise typer.Exit(1)
