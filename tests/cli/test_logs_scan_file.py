"""`sparkrig logs --scan FILE`: a log the user holds (copied from a node, a container's log,
journal output, or standard input) is scanned for the catalogued signatures. The lines are the
pair journey's own: b's headless vLLM after its PP1 rank was killed (docs/journeys/)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.conftest import SPARKRIG

# from docs/journeys/journey-pair.json (the status step after the kill), and bytes a log may hold
DIED = (
    "(MainProcess pid=12152) ERROR 12-07 05:47:43 [multiproc_executor.py:315] Worker proc "
    "VllmWorker-1 died unexpectedly (exit code: None), shutting down executor."
)
LOG = f"(MainProcess pid=12152) INFO starting\n{DIED}\n".encode() + b"\xff\xfe not text\n"


def scan(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SPARKRIG, "logs", "--scan", *args],
        input=stdin.decode("latin-1") if stdin is not None else None,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_copied_log_is_scanned_and_its_signature_named(tmp_path: Path) -> None:
    log = tmp_path / "b-vllm.log"
    log.write_bytes(LOG)
    found = scan(str(log), "--json")
    assert found.returncode == 1, found.stderr  # a signature was found
    report = json.loads(found.stdout)
    assert report["lines"] == 3
    assert [(h["signature"], h["line_number"]) for h in report["hits"]] == [
        ("worker-process-died", 2)
    ]
    shown = scan(str(log))
    assert "b-vllm.log: 3 lines scanned" in shown.stdout
    assert "worker-process-died" in shown.stdout


def test_standard_input_is_a_log_too() -> None:
    found = scan("-", "--json", stdin=LOG)
    assert found.returncode == 1
    assert json.loads(found.stdout)["file"] == "stdin"
    clean = scan("-", stdin=b"INFO all fine\n")
    assert clean.returncode == 0
    assert "no known log signature found" in clean.stdout


def test_what_is_no_log_is_one_line(tmp_path: Path) -> None:
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    for target, said in ((tmp_path, "is a directory"), (empty, "holds no line to scan")):
        result = scan(str(target))
        assert result.returncode != 0
        assert "Traceback" not in result.stderr
        assert len(result.stderr.strip().splitlines()) <= 2, result.stderr  # one line, wrapped
        assert said in " ".join(result.stderr.split())
