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


def test_model_vocab_finds_a_token_only_as_a_json_string_of_its_own(tmp_path: Path) -> None:
    """The real probe through sh and grep: `<think>` as a vocabulary key counts, the same text
    inside another string (a chat template) does not, and a folder without tokenizer.json says
    so instead of judging."""
    import json

    from sparkrig.doctor.probes import node_probes

    def vocab_of(folder: Path) -> str:
        (probe,) = [p for p in node_probes(str(folder), "/tmp", None) if p.name == "model_vocab"]
        return run_probe(LocalExecutor(), probe).stdout

    held = tmp_path / "held"
    held.mkdir()
    (held / "tokenizer.json").write_text(json.dumps({"model": {"vocab": {"<think>": 15}}}))
    text_only = tmp_path / "text-only"
    text_only.mkdir()
    template = {"chat_template": "{{ '<think>' }} ... {{ '</think>' }}", "model": {"vocab": {}}}
    (text_only / "tokenizer.json").write_text(json.dumps(template))
    assert "has <think>\n" in vocab_of(held)
    assert "lacks </think>\n" in vocab_of(held)
    assert "has" not in vocab_of(text_only).split()
    assert vocab_of(tmp_path).startswith(f"no-tokenizer-json {tmp_path}/tokenizer.json")


def test_node_files_reads_a_digest_or_says_missing_or_folder(tmp_path: Path) -> None:
    """The real probe through sh and sha256sum, read by the parser the check uses."""
    import hashlib

    from sparkrig.doctor.parse import file_digests
    from sparkrig.doctor.probes import node_files_probe

    held = tmp_path / "with space" / "nccl-graph-a.xml"
    held.parent.mkdir()
    held.write_text("<graphs/>\n")
    folder = tmp_path / "nccl-graph-b.xml"
    folder.mkdir()
    paths = [str(held), str(tmp_path / "nccl-graph-c.xml"), str(folder)]
    output = run_probe(LocalExecutor(), node_files_probe(paths))
    assert output.skipped is None
    assert file_digests(output.stdout) == {
        str(held): hashlib.sha256(b"<graphs/>\n").hexdigest(),
        paths[1]: "missing",
        str(folder): "folder",
    }
