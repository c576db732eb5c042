"""`up` compares the model's copies on every node that loads the weights, before start: real
`find` listings of real folders, node b's disk stood for by a folder of its own."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from sparkrig.errors import LaunchError
from sparkrig.fabric.runner import CommandResult
from sparkrig.launch.executors import LocalExecutor
from sparkrig.launch.model_identity import check_model_copies, parse_listing


class OtherDisk:
    """Node b: the same machine, but the model path resolves to its own folder."""

    description = "local, other disk"

    def __init__(self, model_path: Path, own: Path) -> None:
        self.model_path, self.own = str(model_path), str(own)

    def run(self, argv: Sequence[str], *, timeout: float | None = None) -> CommandResult:
        mapped = [self.own if arg == self.model_path else arg for arg in argv]
        return LocalExecutor().run(mapped, timeout=timeout)


def _model(folder: Path, shards: dict[str, bytes]) -> Path:
    folder.mkdir(parents=True)
    for name, content in shards.items():
        (folder / name).write_bytes(content)
    return folder


SHARDS = {
    "config.json": b"{}",
    "model-00001-of-00002.safetensors": b"x" * 10,
    "model-00002-of-00002.safetensors": b"y" * 12,
}


async def test_the_same_files_and_sizes_pass(tmp_path: Path) -> None:
    head = _model(tmp_path / "a" / "m", SHARDS)
    worker = _model(tmp_path / "b" / "m", SHARDS)
    runners = {"a": LocalExecutor(), "b": OtherDisk(head, worker)}
    await check_model_copies(str(head), ["a", "b"], runners)


async def test_a_half_copied_model_is_refused_with_what_differs(tmp_path: Path) -> None:
    head = _model(tmp_path / "a" / "m", SHARDS)
    partial = dict(SHARDS)
    del partial["model-00002-of-00002.safetensors"]
    partial["model-00001-of-00002.safetensors"] = b"x" * 4  # a copy cut short
    worker = _model(tmp_path / "b" / "m", partial)
    runners = {"a": LocalExecutor(), "b": OtherDisk(head, worker)}
    with pytest.raises(LaunchError) as refused:
        await check_model_copies(str(head), ["a", "b"], runners)
    message = str(refused.value)
    assert "node b lacks 1 file(s) (model-00002-of-00002.safetensors)" in message
    assert "has other sizes of 1 file(s) (model-00001-of-00002.safetensors)" in message


async def test_a_node_without_the_model_is_named(tmp_path: Path) -> None:
    head = _model(tmp_path / "a" / "m", SHARDS)
    runners = {"a": LocalExecutor(), "b": OtherDisk(head, tmp_path / "b" / "absent")}
    with pytest.raises(LaunchError, match="is not on node"):
        await check_model_copies(str(head), ["a", "b"], runners)


async def test_a_hub_id_compares_nothing_and_one_node_is_still_looked_at(tmp_path: Path) -> None:
    runners = {"a": LocalExecutor()}
    await check_model_copies("org/model", ["a", "b"], {"a": LocalExecutor(), "b": LocalExecutor()})
    await check_model_copies(str(tmp_path), ["a"], runners)  # one node: nothing to compare
    with pytest.raises(LaunchError, match="is not on node"):
        await check_model_copies(str(tmp_path / "nowhere"), ["a"], runners)


async def test_a_folder_without_a_file_the_engine_reads_first_is_named(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors").write_bytes(b"x")
    runners = {"a": LocalExecutor()}
    with pytest.raises(LaunchError, match=r"on node a has no config\.json — vLLM reads"):
        await check_model_copies(str(tmp_path), ["a"], runners, ("config.json",))
    (tmp_path / "config.json").write_text("{}")
    await check_model_copies(str(tmp_path), ["a"], runners, ("config.json",))
    single = tmp_path / "model.safetensors"  # a one-file model is no folder: nothing required
    await check_model_copies(str(single), ["a"], runners, ("config.json",))


def test_listing_lines_that_do_not_parse_are_left_out() -> None:
    assert parse_listing("missing\n") is None
    assert parse_listing("12 a.bin\nx b.bin\n-3 c.bin\n5 \n") == {"a.bin": 12}
