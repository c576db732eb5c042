"""What each recorded instance is doing now: alive or not, uptime, slot use."""

from __future__ import annotations

from typing import Any, Literal

import aiohttp
from pydantic import BaseModel

from sparkrig.launch.process_record import InstanceRecord, is_running, load_records

_SLOTS_TIMEOUT_S = 2.0


class InstanceStatus(BaseModel):
    name: str
    state: Literal["running", "not answering", "exited"]
    pid: int
    base_url: str
    alias: str
    model: str
    uptime_s: float
    slots_total: int | None = None
    slots_busy: int | None = None
    speculative: str | None = None
    log_path: str


async def instance_statuses() -> list[InstanceStatus]:
    timeout = aiohttp.ClientTimeout(total=_SLOTS_TIMEOUT_S)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        return [await _status(session, record) for record in load_records()]


async def _status(session: aiohttp.ClientSession, record: InstanceRecord) -> InstanceStatus:
    status = InstanceStatus(
        name=record.name,
        state="running" if is_running(record) else "exited",
        pid=record.pid,
        base_url=record.base_url,
        alias=record.alias,
        model=record.model,
        uptime_s=record.uptime_s(),
        speculative=record.speculative,
        log_path=str(record.log_path),
    )
    if status.state == "exited":
        return status
    try:
        async with session.get(f"{record.base_url}/slots") as response:
            slots: Any = await response.json(content_type=None)
    except (aiohttp.ClientError, TimeoutError, ValueError):
        status.state = "not answering"
        return status
    if isinstance(slots, list):
        status.slots_total = len(slots)
        status.slots_busy = sum(1 for slot in slots if slot.get("is_processing"))
    return status
