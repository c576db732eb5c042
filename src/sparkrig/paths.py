"""Where sparkrig keeps its cache (engine builds) and state (processes it started).

`SPARKRIG_CACHE_DIR` and `SPARKRIG_STATE_DIR` move them; tests point the state at a temp folder
and keep sharing one engine build.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

from sparkrig.errors import UsageError

CACHE_ENV = "SPARKRIG_CACHE_DIR"
STATE_ENV = "SPARKRIG_STATE_DIR"


def cache_dir() -> Path:
    return _folder(CACHE_ENV, Path(platformdirs.user_cache_dir("sparkrig")))


def state_dir() -> Path:
    return _folder(STATE_ENV, Path(platformdirs.user_state_dir("sparkrig")))


def _folder(env: str, default: Path) -> Path:
    """The folder `env` names, else `default`; a file in its place is an error, not "empty"."""
    override = os.environ.get(env)
    folder = Path(override) if override else default
    if folder.exists() and not folder.is_dir():
        where = f"{env}={override}" if override else str(folder)
        raise UsageError(f"{where} is a file, not a folder — point {env} at a folder")
    return folder
