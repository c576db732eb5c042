"""`gateway serve --stretch`: deliver a reply slower than the upstream made it, by an exact share.

Every block of a reply leaves the gateway at start + (1 + stretch) x (its arrival - start), start
being the moment the request reached the gateway: the time to first token and every gap between
tokens grow by the same factor, so a rate measured behind the gateway is the upstream's divided
by 1 + stretch. A reader task stamps blocks as they arrive, so waiting to send one never delays
the stamp of the next (the stretch does not compound). A benchmark can then judge a configuration
known to be slower by that much (benchmarks/same_verdict.py).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator

import aiohttp


def stretched_ns(start_ns: int, arrival_ns: int, stretch: float) -> int:
    """When a block that arrived at `arrival_ns` leaves: its delay since `start_ns`, stretched."""
    if stretch < 0:
        raise ValueError(f"stretch must be >= 0, got {stretch}")
    return start_ns + round((arrival_ns - start_ns) * (1 + stretch))


async def wait_until_stretched(start_ns: int, arrival_ns: int, stretch: float) -> None:
    wait_ns = stretched_ns(start_ns, arrival_ns, stretch) - time.perf_counter_ns()
    if wait_ns > 0:
        await asyncio.sleep(wait_ns / 1e9)


async def stretched_blocks(
    content: aiohttp.StreamReader, start_ns: int, stretch: float
) -> AsyncGenerator[bytes]:
    """The blocks of `content`, each yielded at its stretched time; a read error is raised here
    when the consumer reaches it, after the blocks that came before it."""
    queue: asyncio.Queue[tuple[int, bytes] | BaseException | None] = asyncio.Queue()

    async def read() -> None:
        try:
            async for block in content.iter_any():
                queue.put_nowait((time.perf_counter_ns(), block))
        except Exception as exc:  # noqa: BLE001 - handed on: the consumer raises it in order
            queue.put_nowait(exc)
        queue.put_nowait(None)

    reader = asyncio.create_task(read())
    try:
        while (item := await queue.get()) is not None:
            if isinstance(item, BaseException):
                raise item
            arrival_ns, block = item
            await wait_until_stretched(start_ns, arrival_ns, stretch)
            yield block
    finally:
        reader.cancel()
