"""The CLI runs under the typer floor itself, not only against a list of its names.

pyproject.toml's floor (`typer>=X`) is installed on its own, with `pip install --no-deps
--target`, into sparkrig's cache (`~/.cache/sparkrig/typer-floor/X/`, beside its wheel), and
put first on PYTHONPATH: `python -m sparkrig` then imports that typer and this environment's
other packages, as a user's venv that kept the oldest allowed typer would. The first run fetches
the wheel through pip (its configured indexes: the local one, then PyPI); later runs use the
cache and need no network. Only when the wheel cannot be had at all is the floor run skipped,
with pip's reason.

`python -m sparkrig` itself is checked here too, under the installed typer.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from sparkrig.paths import cache_dir
from tests.cli.test_typer_floor import typer_floor

ROOT = Path(__file__).resolve().parents[2]
PIP_TIMEOUT_S = 120  # a 120 KB wheel; pip's own retries are bounded by its 180 s timeout


def _pip(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", *args],
        capture_output=True,
        text=True,
        timeout=PIP_TIMEOUT_S,
        check=False,
    )


def _last_line(done: subprocess.CompletedProcess[str]) -> str:
    """pip's own reason: its last ERROR line, else its last line."""
    lines = (done.stderr + done.stdout).strip().splitlines()
    errors = [line for line in lines if line.startswith("ERROR:")]
    return (errors or lines or [f"pip exited {done.returncode}"])[-1]


def floor_typer(version: str, cache: Path) -> Path:
    """A folder holding typer `version` alone, to put first on PYTHONPATH; fetched and installed
    once into `cache`, reused after. Skips the test when the wheel cannot be fetched."""
    target = cache / version
    if (target / "typer" / "__init__.py").is_file():
        return target
    wheels = sorted(cache.glob(f"typer-{version}-*.whl"))
    if not wheels:
        cache.mkdir(parents=True, exist_ok=True)
        done = _pip(
            "download", "--no-deps", "--only-binary=:all:", "-d", str(cache), f"typer=={version}"
        )
        wheels = sorted(cache.glob(f"typer-{version}-*.whl"))
        if done.returncode != 0 or not wheels:
            pytest.skip(f"typer {version}'s wheel cannot be fetched: {_last_line(done)}")
    # installed beside its final place, then renamed: a second run at the same time either
    # finds the whole folder or makes its own
    scratch = Path(tempfile.mkdtemp(prefix=f".{version}-", dir=cache))
    scratch.chmod(0o755)
    done = _pip(
        "install", "--quiet", "--no-deps", "--no-index", "--target", str(scratch), str(wheels[-1])
    )
    assert done.returncode == 0, f"installing {wheels[-1].name} failed: {_last_line(done)}"
    try:
        scratch.rename(target)
    except OSError:
        assert (target / "typer" / "__init__.py").is_file(), f"{target} is not a typer install"
    return target


@pytest.fixture(scope="module")
def floor_env() -> dict[str, str]:
    """This environment with the floor typer first on the import path."""
    folder = floor_typer(typer_floor(), cache_dir() / "typer-floor")
    path = os.pathsep.join([str(folder), str(ROOT / "src")])
    return {**os.environ, "PYTHONPATH": path}


def _sparkrig(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sparkrig", *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_floor_is_the_typer_that_is_imported(floor_env: dict[str, str]) -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import typer, sparkrig.cli; print(typer.__version__)"],
        env=floor_env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == typer_floor()


def test_help_runs_under_the_floor(floor_env: dict[str, str]) -> None:
    done = _sparkrig("--help", env=floor_env)
    assert done.returncode == 0, done.stderr
    assert "Usage: sparkrig" in done.stdout
    assert "bench" in done.stdout


def test_a_commands_help_runs_under_the_floor(floor_env: dict[str, str]) -> None:
    done = _sparkrig("bench", "--help", env=floor_env)
    assert done.returncode == 0, done.stderr
    assert "Usage: sparkrig bench" in done.stdout
    assert "--concurrency" in done.stdout


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["bench", "--nope"],
            "error: No such option: --nope (Possible options: --force, --model) — see "
            "`sparkrig bench --help`",
        ),
        (
            ["bench", "http://127.0.0.1:9", "--tokens", "0"],
            "error: Invalid value for '--tokens': 0 is too small",
        ),
    ],
    ids=["unknown option", "out of range"],
)
def test_a_usage_error_is_one_line_under_the_floor(
    floor_env: dict[str, str], args: list[str], line: str
) -> None:
    done = _sparkrig(*args, env=floor_env)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(line), lines[0]


def test_python_dash_m_sparkrig_runs_the_cli() -> None:
    done = _sparkrig("--help")
    assert done.returncode == 0, done.stderr
    assert "Usage: sparkrig" in done.stdout
