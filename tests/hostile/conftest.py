"""The hostile-input corpus: every case runs the CLI in-process through the same root group a
user's `sparkrig` runs (cli/one_line.py), and asserts what a user must see."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sparkrig.cli import app
from sparkrig.paths import CACHE_ENV, STATE_ENV
from tests.hostile.fake_server import FakeServer, running_fake_server


@dataclass
class Outcome:
    code: int
    stdout: str
    stderr: str
    exception: BaseException | None

    @property
    def error_lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.startswith("error:")]


def run_cli(*args: str, env: dict[str, str] | None = None) -> Outcome:
    result = CliRunner().invoke(app, list(args), env=env)
    return Outcome(result.exit_code, result.stdout, result.stderr, result.exception)


def one_line_failure(outcome: Outcome, *says: str, progress: bool = False) -> str:
    """The outcome is a failure told in one `error: what — fix` line; returns that line.

    `progress`: the command may print progress lines to stderr before its error line."""
    assert outcome.code not in (0, None), (outcome.stdout, outcome.stderr)
    assert outcome.exception is None or isinstance(outcome.exception, SystemExit), repr(
        outcome.exception
    )
    assert "Traceback" not in outcome.stdout + outcome.stderr
    assert "errors.pydantic.dev" not in outcome.stdout + outcome.stderr
    lines = outcome.stderr.strip().splitlines()
    if not progress:
        assert len(lines) == 1, outcome.stderr
    assert len(outcome.error_lines) == 1, outcome.stderr
    line = outcome.error_lines[0]
    assert " — " in line, line
    assert len(line) < 700, f"{len(line)} characters: {line[:300]}"
    for fragment in says:
        assert fragment in line, line
    return line


@pytest.fixture(scope="session")
def fake() -> Iterator[FakeServer]:
    with running_fake_server() as server:
        yield server


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh state folder and cache folder for this case only."""
    folder = tmp_path / "state"
    folder.mkdir()
    monkeypatch.setenv(STATE_ENV, str(folder))
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    return folder
