"""Where sparkrig keeps its cache (engine builds) and state (processes it started).

`SPARKRIG_CACHE_DIR` and `SPARKRIG_STATE_DIR` move them; tests point the state at a temp folder
and keep sharing one engine build.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

CACHE_ENV = "SPARKRIG_CACHE_DIR"
STATE_ENV = "SPARKRIG_STATE_DIR"


def cache_dir() -> Path:
    override = os.environ.get(CACHE_ENV)
    return Path(override) if override else Path(platformdirs.user_cache_dir("sparkrig"))


def state_dir() -> Path:
    override = os.environ.get(STATE_ENV)
    return Path(override) if override else Path(platformdirs.user_state_dir("sparkrig"))
