"""One request's timing and outcome as the serving gateway saw it: written by the gateway
(`gateway/serve.py`), read by the workload record (`gateway/workload.py`). Its own module so that
neither of the two imports the other."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from sparkrig.gateway.request_faults import Api


@dataclass
class Trace:
    """One request's timing and outcome as the gateway saw it."""

    request_id: str
    api: Api
    body: dict[str, Any]
    wall: float
    start_ns: int
    status: int = 200
    error: str | None = None
    first_output_ns: int | None = None
    last_output_ns: int | None = None
    stretch: float = 0.0  # the share this reply is delivered slower (serve --stretch)

    def output_sent(self) -> None:
        now = time.perf_counter_ns()
        self.first_output_ns = self.first_output_ns or now
        self.last_output_ns = now
