"""A journey's steps, each a sparkrig command as a user types it, kept in one transcript: the
command, its exit status, its seconds and its output, written after every step (so a failed run
shows how far it got). `SPARKRIG_JOURNEY_OUT` names a folder to keep it in (docs/launch.md shows
one run's); otherwise it stays in the test's temporary folder."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from sparkrig.paths import STATE_ENV
from tests.conftest import SPARKRIG

OUT_ENV = "SPARKRIG_JOURNEY_OUT"


@dataclass
class Journey:
    name: str
    folder: Path
    """the test's folder: the cluster file, the receipts, the state"""
    steps: list[dict[str, object]] = field(default_factory=list)

    @property
    def state(self) -> Path:
        return self.folder / "state"

    @property
    def transcript(self) -> Path:
        chosen = os.environ.get(OUT_ENV)
        folder = Path(chosen) if chosen else self.folder
        folder.mkdir(parents=True, exist_ok=True)
        return folder / f"journey-{self.name}.json"

    def sparkrig(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        """One step: `sparkrig ARGS` with the journey's state folder, recorded."""
        env = {**os.environ, STATE_ENV: str(self.state)}
        began = time.monotonic()
        try:
            done = subprocess.run(
                [SPARKRIG, *args],
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
                env=env,
                cwd=self.folder,
            )
        except subprocess.TimeoutExpired as exc:
            self._record(args, None, time.monotonic() - began, str(exc.stdout or ""), "timed out")
            raise
        self._record(args, done.returncode, time.monotonic() - began, done.stdout, done.stderr)
        return done

    def note(self, what: str, seconds: float, detail: str = "") -> None:
        """A step that is not a sparkrig command (the fault, a client through the gateway)."""
        self.steps.append({"step": what, "seconds": round(seconds, 1), "detail": detail})
        self._save()

    def _record(
        self, args: tuple[str, ...], rc: int | None, seconds: float, stdout: str, stderr: str
    ) -> None:
        shown = shlex.join(["sparkrig", *args]).replace(str(self.folder), "$TWIN")
        self.steps.append(
            {
                "step": shown,
                "rc": rc,
                "seconds": round(seconds, 1),
                "stdout": stdout[-6000:].replace(str(self.folder), "$TWIN"),
                "stderr": stderr[-3000:].replace(str(self.folder), "$TWIN"),
            }
        )
        self._save()

    def _save(self) -> None:
        self.transcript.write_text(
            json.dumps({"journey": self.name, "steps": self.steps}, indent=1)
        )

    def seconds(self) -> float:
        return sum(float(str(step["seconds"])) for step in self.steps)
