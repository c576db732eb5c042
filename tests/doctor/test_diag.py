"""`sparkrig diag`: the archive holds the launch state, every rank's log end and scan, doctor's
captures, the latest receipts and the fabric plan — and none of the secrets and prompt text
planted in each of them (the test greps every member of the archive)."""

from __future__ import annotations

import json
import os
import subprocess
import tarfile
from datetime import UTC, datetime
from pathlib import Path

import pytest

from sparkrig.doctor import diag_bundle
from sparkrig.doctor.redact import REMOVED, redact_json, redact_text
from sparkrig.engines.launch_spec import ProcessSpec
from sparkrig.fabric.plan_model import EnvVar
from sparkrig.fabric.runner import ExecutorSpec
from sparkrig.launch.state import LaunchState, StartedRecord, remove_state, save_state
from tests.conftest import SPARKRIG
from tests.launch.test_cluster_loopback import loopback_cluster

NAME = "loopback-rpc"  # the loopback cluster file's name
KEY = "sk-PLANTEDkey0123456789"
HF = "hf_PLANTEDtoken0123456789"
PROMPT = "PLANTED prompt about the lighthouse keeper"
REPLY = "PLANTED reply text from the model"
PLANTED = (KEY, HF, PROMPT, REPLY, "PLANTEDpassword")


def test_redaction_fails_on_each_secret_and_keeps_the_rest() -> None:
    line = f"Authorization: Bearer {KEY} HF_TOKEN={HF} --api-key {KEY} prompt: '{PROMPT}', n=3"
    cleaned = redact_text(line)
    assert not [s for s in PLANTED if s in cleaned]
    assert cleaned.endswith(", n=3")
    assert (
        redact_text("GPU KV cache size: 1,923,456 tokens") == "GPU KV cache size: 1,923,456 tokens"
    )
    value = {"messages": [{"role": "user", "content": PROMPT}], "max_tokens": 8, "model": "m"}
    assert redact_json(value) == {"messages": REMOVED, "max_tokens": 8, "model": "m"}


def _record(tmp_path: Path, node: str, role: str, lines: list[str]) -> StartedRecord:
    log = tmp_path / f"{node}.log"
    log.write_text("\n".join(lines) + "\n")
    process = ProcessSpec(
        node=node,
        role=role,  # type: ignore[arg-type]
        name="vllm",
        argv=["vllm", "serve", "/m", "--api-key", KEY],
        env=[EnvVar(name="HF_TOKEN", value=HF, reason="gated model")],
        ready_when="alive",
    )
    return StartedRecord(
        process=process,
        executor=ExecutorSpec(kind="local"),
        pid=999_999,
        pid_start_ticks=1,
        log_path=str(log),
        started_at=datetime.now(UTC),
    )


def test_the_archive_holds_every_part_and_no_planted_secret(tmp_path: Path) -> None:
    cluster_file = tmp_path / "cluster.toml"
    loopback_cluster(cluster_file)
    worker = _record(
        tmp_path,
        "b",
        "worker",
        [
            "(APIServer pid=7) INFO 12-01 20:41:11 [logger.py:41] Received request: "
            f"prompt: '{PROMPT}'",
            "torch.distributed.DistStoreError: Timed out after 601 seconds waiting for clients. "
            "1/2 clients joined.",
        ],
    )
    head = _record(tmp_path, "a", "head", [f"curl -H 'Authorization: Bearer {KEY}' http://x"])
    state = LaunchState(
        cluster=NAME,
        api_url="http://127.0.0.1:1",
        model_name="m",
        stall_window_s=60,
        started=[worker, head],
        engine="vllm",
    )
    save_state(state)
    doctor = tmp_path / "doctor" / "b"
    doctor.mkdir(parents=True)
    (doctor / "env.out").write_text(
        f"OPENAI_API_KEY={KEY}\nDB_PASSWORD=PLANTEDpassword\nPATH=/usr/bin\n"
    )
    (doctor / "meta.json").write_text(json.dumps({"reached_by": "local", "token": HF}))
    receipts = tmp_path / "receipts"
    receipts.mkdir()
    receipt = {
        "kind": "sparkrig-check",
        "samples": [{"prompt": PROMPT, "text": REPLY, "tokens": 9}],
    }
    (receipts / "check.json").write_text(json.dumps(receipt))
    out = tmp_path / "bundle" / "diag.tar.gz"
    try:
        done = subprocess.run(
            [
                SPARKRIG,
                "diag",
                str(cluster_file),
                "--out",
                str(out),
                "--doctor",
                str(tmp_path / "doctor"),
                "--receipts",
                str(receipts),
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        remove_state(state)
    assert done.returncode == 0, done.stderr
    with tarfile.open(out) as archive:
        members = {m.name: archive.extractfile(m).read().decode() for m in archive.getmembers()}  # type: ignore[union-attr]
    root = "sparkrig-diag/"
    for part in (
        "manifest.json",
        f"launch/{NAME}/state.json",
        f"launch/{NAME}/scan.json",
        f"launch/{NAME}/logs/b-vllm.log",
        f"launch/{NAME}/logs/a-vllm.log",
        "doctor/b/env.out",
        "doctor/b/meta.json",
        "receipts/check.json",
        "fabric/plan.json",
    ):
        assert root + part in members, sorted(members)
    leaked = [(name, s) for name, body in members.items() for s in PLANTED if s in body]
    assert not leaked
    assert "PATH=/usr/bin" in members[root + "doctor/b/env.out"]  # the rest is kept
    scan = json.loads(members[f"{root}launch/{NAME}/scan.json"])
    assert [h["signature"] for r in scan["ranks"] for h in r["hits"]] == ["rank-never-joined"]
    receipt_kept = json.loads(members[root + "receipts/check.json"])
    assert receipt_kept["samples"][0]["tokens"] == 9
    manifest = json.loads(members[root + "manifest.json"])
    assert any("fabric apply record" in line for line in manifest["not_included"])
    assert not list(out.parent.glob(".*.partial"))


def test_a_receipt_or_capture_that_cannot_be_read_is_listed_and_the_rest_bundled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pipe named like a receipt (reading it would wait forever), a receipt that is not JSON
    and a capture past the size kept: each is named in the manifest's list, none stops diag."""
    receipts = tmp_path / "receipts"
    receipts.mkdir()
    os.mkfifo(receipts / "pipe.json")
    (receipts / "broken.json").write_text("{")
    (receipts / "check.json").write_text('{"kind": "sparkrig-check"}')
    doctor = tmp_path / "doctor" / "b"
    doctor.mkdir(parents=True)
    (doctor / "dmesg.out").write_text("x" * 64)
    os.mkfifo(doctor / "lspci.out")
    monkeypatch.setattr(diag_bundle, "_TEXT_LIMIT", 16)
    bundle = diag_bundle.Bundle()

    diag_bundle.add_receipts(bundle, sorted(receipts.iterdir()))
    diag_bundle.add_doctor(bundle, tmp_path / "doctor")

    assert sorted(bundle.members) == [
        "sparkrig-diag/doctor/b/dmesg.out",
        "sparkrig-diag/receipts/check.json",
    ]
    assert bundle.members["sparkrig-diag/doctor/b/dmesg.out"] == b"x" * 16
    assert [line.split(" ", 2)[1] for line in bundle.missing[:2]] == [
        str(receipts / "broken.json"),
        str(receipts / "pipe.json"),
    ]
    assert "is a named pipe" in bundle.missing[1]
    assert bundle.missing[2:] == [
        "doctor/b/dmesg.out: cut after its first 16 bytes",
        f"doctor/b/lspci.out: doctor capture {doctor / 'lspci.out'} is a named pipe, not a "
        "regular file",
    ]


def _diag(out: Path, state: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SPARKRIG_STATE_DIR": str(state)}
    return subprocess.run(
        [SPARKRIG, "diag", "--out", str(out), *extra],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_out_replaces_an_earlier_archive_but_no_other_file_without_force(tmp_path: Path) -> None:
    """Running diag again refreshes its own archive; a file of the user's at --out is kept
    unless --force says otherwise, and the refusal is one line that names the fix."""
    state = tmp_path / "state"
    archive = tmp_path / "sparkrig-diag.tar.gz"
    for _ in range(2):
        result = _diag(archive, state)
        assert result.returncode == 0, result.stderr
    assert diag_bundle.is_diag_archive(archive)

    notes = tmp_path / "notes.tar.gz"
    with tarfile.open(notes, "w:gz") as other:  # a real archive, of something else
        other.add(tmp_path / "sparkrig-diag.tar.gz", arcname="mine/backup.tar.gz")
    kept = notes.read_bytes()
    refused = _diag(notes, state)
    assert refused.returncode != 0
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1, refused.stderr
    assert "is not a sparkrig diag archive" in lines[0]
    assert "--force" in lines[0]
    assert notes.read_bytes() == kept

    forced = _diag(notes, state, "--force")
    assert forced.returncode == 0, forced.stderr
    assert diag_bundle.is_diag_archive(notes)


@pytest.mark.parametrize("content", [b"", b"plain text", b"\x1f\x8b\x08garbage"])
def test_only_an_archive_diag_wrote_is_its_own(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "x.tar.gz"
    path.write_bytes(content)
    assert not diag_bundle.is_diag_archive(path)
    os.mkfifo(tmp_path / "pipe.tar.gz")  # never opened: it would wait for a writer
    assert not diag_bundle.is_diag_archive(tmp_path / "pipe.tar.gz")
