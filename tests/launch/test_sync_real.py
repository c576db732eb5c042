"""`sync` with real podman and real files: node b is this machine with its own image store and
its own model folder (the same podman and sh, other state), so the image and the model really
differ there, are copied by `podman save | podman load` and file pipes, and are proven after."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

from sparkrig.engines.launch_spec import ContainerRun, ProcessSpec
from sparkrig.fabric.runner import ExecutorSpec
from sparkrig.launch.cluster_plan import LaunchPlan, NodeAccess
from sparkrig.launch.executors import LocalExecutor
from sparkrig.launch.sync import apply_sync, plan_sync
from tests.launch.container_image import (
    PODMAN,
    OtherNode,
    engine_rootfs_tar,
    import_image,
    podman,
)

IMAGE = "localhost/sparkrig-sync-test:1"


def _plan(model: Path) -> LaunchPlan:
    run = ContainerRun(
        runtime="podman", image=IMAGE, name="sparkrig-s-b-vllm", labels={"sparkrig.cluster": "s"}
    )
    local = ExecutorSpec(kind="local")
    return LaunchPlan(
        cluster="s",
        engine="vllm",
        backend="mp",
        head="a",
        api_url="http://127.0.0.1:1",
        model_name="m",
        processes=[
            ProcessSpec(
                node=node,
                role="head" if node == "a" else "worker",
                name="vllm",
                argv=["podman", "run", IMAGE],
                ready_when="alive",
                container=run,
            )
            for node in ("b", "a")
        ],
        access=[NodeAccess(node=n, executor=local, log_dir="/tmp") for n in ("a", "b")],
        stall_window_s=60,
        ready_timeout_s=60,
        model_path=str(model),
        weight_nodes=["b", "a"],
    )


@pytest.mark.skipif(PODMAN is None, reason="podman is not installed here")
async def test_sync_copies_only_what_differs_and_proves_it(tmp_path: Path, engine: Any) -> None:
    model = tmp_path / "a" / "model"
    (model / "sub").mkdir(parents=True)
    (model / "config.json").write_text("{}")
    (model / "model-00001.safetensors").write_bytes(b"w" * 4096)
    (model / "sub" / "tokenizer.json").write_text('{"v": 1}')
    theirs = tmp_path / "b" / "model"
    theirs.mkdir(parents=True)
    (theirs / "config.json").write_text("{}")  # already there: not copied
    (theirs / "model-00001.safetensors").write_bytes(b"w" * 100)  # cut short: copied again

    store = Path(tempfile.mkdtemp(prefix="sr-"))  # podman refuses a runroot over 50 characters
    tar = engine_rootfs_tar([Path("/bin/true")], tmp_path / "rootfs.tar")
    import_image(tar, IMAGE)
    try:
        executors: dict[str, Any] = {"a": LocalExecutor(), "b": OtherNode(store, model, theirs)}
        plan = _plan(model)
        before = await plan_sync(plan, executors)
        [node_b] = before.nodes
        assert node_b.image == "missing"
        assert node_b.model_files == ["model-00001.safetensors", "sub/tokenizer.json"]
        said: list[str] = []
        after = await apply_sync(before, plan, executors, fan_out=2, say=said.append)
        assert after.in_step
        assert (theirs / "sub" / "tokenizer.json").read_text() == '{"v": 1}'
        assert (theirs / "model-00001.safetensors").stat().st_size == 4096
        assert not list(theirs.rglob("*.sparkrig-partial"))
        assert any("sha256 equal" in line for line in after.verified)
        assert any("same layers" in line for line in after.verified)
        again = await plan_sync(plan, executors)
        assert again.in_step  # nothing left to copy
    finally:
        podman("rmi", "--force", IMAGE)
        podman("rmi", "--force", IMAGE, root=store)
        shutil.rmtree(store, ignore_errors=True)


def test_a_failed_save_is_not_a_good_load_and_a_machine_without_bash_still_pipes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from sparkrig.launch import sync

    if shutil.which("bash") is not None:  # pipefail: the source's failure is the pipe's
        assert sync._pipe(["sh", "-c", "exit 3"], ["cat"], timeout=10).returncode != 0
    monkeypatch.setattr(sync.shutil, "which", lambda name: None)  # a machine with no bash
    done = sync._pipe(["echo", "layer"], ["cat"], timeout=10)
    assert done.returncode == 0
    assert done.stdout == "layer\n"
