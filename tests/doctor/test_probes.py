"""Probes run for real on this machine through the local executor: the engine venv's package
list, and a missing engine as a skipped line naming how to install it."""

from __future__ import annotations

import sys
from pathlib import Path

from sparkrig.doctor.collect import run_probe
from sparkrig.doctor.probes import engine_python_probe
from sparkrig.launch.executors import LocalExecutor

VENV_SCRIPT = str(Path(sys.executable).parent / "sparkrig")  # a command beside its venv python


def test_engine_python_lists_the_venv_beside_the_engine_command() -> None:
    output = run_probe(LocalExecutor(), engine_python_probe(VENV_SCRIPT))
    assert output.skipped is None
    assert any(line.startswith("pydantic==") for line in output.stdout.splitlines())


def test_an_engine_that_is_not_installed_is_a_skipped_line() -> None:
    output = run_probe(LocalExecutor(), engine_python_probe("vllm-not-here"))
    assert output.skipped == (
        "vllm-not-here is not installed — install vllm-not-here on the node (in a venv with pip)"
    )
