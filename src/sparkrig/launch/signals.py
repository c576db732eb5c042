"""Turn SIGTERM into KeyboardInterrupt so `finally` blocks stop the engines sparkrig started.

Without this, `timeout`, a CI runner or `kill` ends the Python process at once and a detached
llama-server outlives it.
"""

from __future__ import annotations

import signal
from types import FrameType


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def stop_cleanly_on_sigterm() -> None:
    signal.signal(signal.SIGTERM, _interrupt)
