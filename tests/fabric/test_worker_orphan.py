"""A fabric-test worker whose reader is gone exits. Over ssh, stopping a run kills the local ssh
client and nothing else: on the twin's pair a rank blocked waiting for its peer lived on for
minutes after `fabric test` said every worker was stopped. Its heartbeat now finds the pipe
closed and the worker exits. A real worker process, rank 0 of two, whose peer never comes."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from tests.fabric.collective_ranks import free_port

pytest.importorskip("torch")


def test_a_worker_whose_reader_left_exits_instead_of_waiting_for_its_peer() -> None:
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "sparkrig.fabric.collectives.worker",
            "run",
            "--node",
            "a",
            "--rank",
            "0",
            "--size",
            "2",
            "--master",
            "127.0.0.1",
            "--port",
            str(free_port()),
            "--backend",
            "gloo",
            "--sizes",
            "8192",
            "--liveness",
            "600",
            "--heartbeat",
            "0.2",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert worker.stdout is not None
        assert '"heartbeat"' in worker.stdout.readline()  # alive, waiting for rank 1
        worker.stdout.close()  # the reader goes, as a killed ssh client's channel does
        began = time.monotonic()
        assert worker.wait(timeout=30) == 1
        assert time.monotonic() - began < 30  # not torch's 600 s rendezvous timeout
    finally:
        worker.kill()
        worker.wait()
