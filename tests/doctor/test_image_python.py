"""The engine's packages inside its image: the probe's command line run for real (podman on an
image with sh and no python; this machine's python for the listing's format), and the
comparison on the fixtures (tests/fixtures/doctor/README.md: image-stack-*)."""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import pytest

from sparkrig.doctor.checks.cluster import python_stack
from sparkrig.doctor.collect import run_probe
from sparkrig.doctor.probes import image_python_probe
from sparkrig.fabric.runner import CommandResult
from sparkrig.launch.executors import LocalExecutor
from tests.doctor.fixtures import report_of
from tests.launch.container_image import (
    PODMAN,
    engine_rootfs_tar,
    host_ulimits,
    import_image,
)

CHECK = "same-image-python-stack"


def test_the_same_image_on_every_node_passes() -> None:
    report = report_of("image-stack-same", only=[CHECK])
    assert report.checks_run == 1
    assert report.findings == []
    assert report.skipped == []


def test_another_torch_and_nccl_in_one_nodes_image_is_named() -> None:
    (finding,) = report_of("image-stack-mixed", only=[CHECK]).findings
    assert finding.severity == "error"
    assert "torch spark1 2.11.0, spark2 2.10.0" in finding.seen
    assert "nvidia-nccl-cu13 spark1 2.28.9, spark2 2.30.7" in finding.seen
    assert "sparkrig sync" in finding.fix


def test_an_image_without_python_is_a_skip_with_its_reason() -> None:
    report = report_of("image-stack-no-python", only=[CHECK])
    assert report.findings == []
    assert report.checks_run == 0
    (skipped,) = report.skipped
    assert skipped.node == "spark2"
    assert skipped.checks == [CHECK]
    assert "sh or python in the image localhost/sh-only:1" in skipped.reason


def test_the_host_venv_check_stays_out_of_a_contained_run() -> None:
    """image-stack-mixed holds no host listing; a contained run never compares host venvs."""
    report = report_of("image-stack-mixed", only=["same-python-stack"])
    assert report.checks_run == 0
    assert report.findings == []


def test_the_listing_reads_as_pip_freeze_here() -> None:
    """The probe's in-image command, run on this machine's sh and python3: name==version lines
    the stack parser reads (no engine command here, so it falls back to python3 on PATH: this
    test's own venv first)."""
    argv = image_python_probe("podman", [], "unused", "vllm-not-here").argv
    inner = argv[argv.index("--entrypoint") + 1 :]
    inner.pop(1)  # the image
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    listed = subprocess.run(
        inner, capture_output=True, text=True, check=True, timeout=60, env=env
    ).stdout
    lines = listed.splitlines()
    assert lines
    assert all("==" in line for line in lines)
    assert f"pydantic=={importlib.metadata.version('pydantic')}" in lines
    fake = listed + "torch==2.11.0\nnvidia-nccl-cu13==2.28.9\n"
    assert python_stack(fake) == {"torch": "2.11.0", "nvidia-nccl-cu13": "2.28.9"}


class _Store:
    """podman on a store of its own, with the limits this machine lets a container raise."""

    description = "local podman, own store"

    def __init__(self, root: Path) -> None:
        self.root = root

    def run(self, argv: Sequence[str], *, timeout: float | None = None) -> CommandResult:
        store = ["--root", f"{self.root}/storage", "--runroot", f"{self.root}/run"]
        args = [argv[0], *store, *argv[1:]]
        at = args.index("run") + 1
        args[at:at] = [a for n, v in host_ulimits().items() for a in ("--ulimit", f"{n}={v}")]
        return LocalExecutor().run(args, timeout=timeout)


@pytest.mark.skipif(PODMAN is None, reason="podman is not installed")
def test_the_probe_runs_against_podman() -> None:
    """An image holding only /bin/sh: the container starts, finds no python, and the probe is
    skipped naming the image; an image the node lacks is never pulled."""
    store = Path(tempfile.mkdtemp(prefix="sr-"))  # podman refuses a runroot over 50 characters
    try:
        _probe_against(store)
    finally:
        shutil.rmtree(store, ignore_errors=True)


def _probe_against(store: Path) -> None:
    tar = engine_rootfs_tar([Path("/bin/sh")], store / "rootfs.tar")
    import_image(tar, "localhost/sh-only:1", root=store)
    runner = _Store(store)
    probe = image_python_probe("podman", ["--runtime", "runc"], "localhost/sh-only:1", "vllm")
    output = run_probe(runner, probe)
    assert output.returncode == 127, output.stderr
    assert output.skipped is not None
    assert "sh or python in the image localhost/sh-only:1" in output.skipped
    absent = image_python_probe("podman", ["--runtime", "runc"], "localhost/not-here:1", "vllm")
    missing = run_probe(runner, absent)
    assert missing.skipped is not None
    assert "image not known" in missing.skipped
