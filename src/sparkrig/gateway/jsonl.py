"""An append-only JSONL file the gateway writes one line at a time (flushed, so a line is on
disk when the request is over); no path: nothing is written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO, Any

from sparkrig.errors import UsageError


class JsonlLog:
    def __init__(self, path: Path | None) -> None:
        self._file: IO[str] | None = None
        if path is not None:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                self._file = path.open("a", encoding="utf-8")
            except OSError as exc:
                message = f"cannot write {path} ({exc.strerror}) — pick another path"
                raise UsageError(message) from exc

    @property
    def enabled(self) -> bool:
        return self._file is not None

    def write(self, line: dict[str, Any]) -> None:
        if self._file is not None:
            self._file.write(json.dumps(line, ensure_ascii=False) + "\n")
            self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
