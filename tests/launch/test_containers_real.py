"""The engine in real containers (podman, runc): a two-node llama.cpp RPC cluster on loopback
whose head and worker run from an image built here, refused while a foreign container holds one
of its names, then ready, named and labelled, reported by inspect, killed, and brought down with
only its own containers removed; an image that is another build on one node is refused before
anything starts. Skips, saying why, where podman cannot run a container."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sparkrig.engines.launch_spec import ContainerRun, ProcessSpec
from sparkrig.errors import LaunchError
from sparkrig.launch.container_checks import check_containers
from sparkrig.launch.executors import LocalExecutor
from sparkrig.launch.state import load_state
from tests.launch.container_image import (
    PODMAN,
    OtherNode,
    engine_rootfs_tar,
    host_ulimits,
    import_image,
    podman,
    working_runtime_args,
)
from tests.launch.test_cluster_bad_input import assert_one_line_error, run
from tests.launch.test_cluster_loopback import loopback_cluster

NAME = "loopback-ctr"
IMAGE = "localhost/sparkrig-test-engine:1"


@pytest.fixture(scope="module")
def image(engine: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, list[str]]]:
    if PODMAN is None:
        pytest.skip("podman is not installed here (scripts/ensure-test-tools installs it as root)")
    folder = tmp_path_factory.mktemp("image")
    binaries = [engine.server_binary, engine.rpc_binary, Path("/bin/true")]
    import_image(engine_rootfs_tar(binaries, folder / "rootfs.tar"), IMAGE)
    runtime_args, why = working_runtime_args(IMAGE)
    if runtime_args is None:
        pytest.skip(f"podman cannot run a container on this machine: {why}")
    yield IMAGE, runtime_args
    podman("rmi", "--force", IMAGE)


def container_cluster(
    path: Path, image: str, runtime_args: list[str], extra: str = "", runtime: str = "podman"
) -> None:
    """The loopback RPC cluster, its head and worker in containers of `image`."""
    ulimits = ", ".join(f'{k} = "{v}"' for k, v in host_ulimits().items())
    loopback_cluster(
        path,
        NAME,
        f"""[engine.container]
runtime = "{runtime}"
image = "{image}"
gpus = "none"
runtime_args = {json.dumps(runtime_args)}
ulimits = {{ {ulimits} }}
{extra}""",
    )


def ours() -> list[dict[str, Any]]:
    listed = podman("ps", "--all", "--format", "json", "--filter", f"label=sparkrig.cluster={NAME}")
    return json.loads(listed.stdout or "[]")


def test_a_cluster_in_containers_is_named_inspected_killed_and_removed(
    tmp_path: Path, image: tuple[str, list[str]]
) -> None:
    reference, runtime_args = image
    cluster_file = tmp_path / "containers.toml"
    container_cluster(cluster_file, reference, runtime_args)
    foreign = f"sparkrig-{NAME}-b-rpc"
    made = podman(*runtime_args, "create", "--name", foreign, reference, "/bin/true")
    assert made.returncode == 0, made.stderr
    try:
        refused = run("up", str(cluster_file), "--apply")
        assert_one_line_error(refused, foreign, "not started by sparkrig", "never touches it")
        assert podman("container", "exists", foreign).returncode == 0  # left alone
        podman("rm", "--force", foreign)

        up = run("up", str(cluster_file), "--apply", timeout=240)
        assert up.returncode == 0, up.stderr
        names = {c["Names"][0] for c in ours()}
        assert names == {f"sparkrig-{NAME}-a-llama-server", f"sparkrig-{NAME}-b-rpc"}

        status = run("status", str(cluster_file), "--json")
        rows = json.loads(status.stdout)["rows"]
        assert all(row["container"].startswith("running since") for row in rows), rows
        table = run("status", str(cluster_file))
        assert "container" in table.stdout
        assert "running" in table.stdout  # the cell folds inside the table

        started = {c["Names"][0]: c["Id"] for c in ours()}
        again = run("up", str(cluster_file), "--apply", "--replace", timeout=240)
        assert again.returncode == 0, again.stderr
        replaced = {c["Names"][0]: c["Id"] for c in ours()}
        assert replaced.keys() == started.keys()
        assert set(replaced.values()).isdisjoint(started.values())  # new containers, same names

        logs = run("logs", str(cluster_file), "b", "-n", "20")
        assert logs.returncode == 0
        assert "Accepted client connection" in logs.stdout, logs.stdout

        podman("kill", f"sparkrig-{NAME}-b-rpc")
        after_kill = json.loads(run("status", str(cluster_file), "--json").stdout)
        worker = next(row for row in after_kill["rows"] if row["node"] == "b")
        assert worker["container"].startswith("exited"), worker
        assert not after_kill["ready"]
    finally:
        down = run("down", str(cluster_file), "--apply")
        podman("rm", "--force", foreign)
    assert down.returncode == 0, down.stderr
    assert ours() == []
    assert load_state(NAME) is None


def test_a_missing_bind_source_is_refused_before_start(
    tmp_path: Path, image: tuple[str, list[str]]
) -> None:
    reference, runtime_args = image
    cluster_file = tmp_path / "patched.toml"
    patch = tmp_path / "absent-patch.py"
    mount = f'[[engine.container.mounts]]\nsource = "{patch}"\ntarget = "/patches/fix.py"\n'
    container_cluster(cluster_file, reference, runtime_args, extra=mount)
    refused = run("up", str(cluster_file), "--apply")
    assert_one_line_error(refused, str(patch), "missing on a, b", "patch-on-every-node")
    assert ours() == []


def _processes(reference: str, runtime_args: list[str]) -> list[ProcessSpec]:
    return [
        ProcessSpec(
            node=node,
            role="head" if node == "a" else "worker",
            name="rpc",
            argv=["podman", "run", reference],
            ready_when="alive",
            container=ContainerRun(
                runtime="podman",
                runtime_args=runtime_args,
                image=reference,
                name=f"sparkrig-identity-{node}-rpc",
                labels={"sparkrig.cluster": "identity"},
            ),
        )
        for node in ("a", "b")
    ]


async def test_another_build_of_the_image_on_one_node_is_refused_before_start(
    tmp_path: Path, engine: Any, image: tuple[str, list[str]]
) -> None:
    reference, runtime_args = image
    store = Path(tempfile.mkdtemp(prefix="sr-"))  # podman refuses a runroot over 50 characters
    try:
        runners = {"a": LocalExecutor(), "b": OtherNode(store)}
        processes = _processes(reference, runtime_args)
        said: list[str] = []
        with pytest.raises(LaunchError, match=r"node b: image .* is not there"):
            await check_containers(processes, runners, "identity", said.append)

        binaries = [engine.server_binary, engine.rpc_binary, Path("/bin/true")]
        same = engine_rootfs_tar(binaries, tmp_path / "same.tar")
        import_image(same, reference, root=store)
        await check_containers(processes, runners, "identity", said.append)  # same layers: passes

        other = engine_rootfs_tar(binaries, tmp_path / "other.tar", {"etc/patched": b"1"})
        import_image(other, reference, root=store)
        with pytest.raises(LaunchError) as refused:
            await check_containers(processes, runners, "identity", said.append)
        message = str(refused.value)
        assert "not the same build on every node" in message
        assert "node b: " in message
        assert "first different at layer 1" in message
        podman("rmi", "--force", reference, root=store)
    finally:
        shutil.rmtree(store, ignore_errors=True)


@pytest.mark.skipif(shutil.which("docker") is None, reason="no docker client here")
def test_a_docker_without_its_daemon_is_one_line_before_start(tmp_path: Path) -> None:
    """The docker client here has no daemon (a real refusal, not a fake)."""
    if subprocess.run(["docker", "info"], capture_output=True, check=False).returncode == 0:
        pytest.skip("a docker daemon answers here")
    cluster_file = tmp_path / "docker.toml"
    container_cluster(cluster_file, IMAGE, [], runtime="docker")
    refused = run("up", str(cluster_file), "--apply")
    assert_one_line_error(refused, "node ", "no daemon answering", "systemctl enable --now docker")
    assert load_state(NAME) is None


def test_sync_plans_against_the_head_and_names_a_bad_source(
    tmp_path: Path, image: tuple[str, list[str]]
) -> None:
    reference, runtime_args = image
    cluster_file = tmp_path / "sync.toml"
    container_cluster(cluster_file, reference, runtime_args)
    same = run("sync", str(cluster_file), "--json")
    assert same.returncode == 0, same.stderr
    [node_b] = json.loads(same.stdout)["nodes"]
    assert node_b["image"] == "same"
    assert not node_b["model_needed"]  # llama.cpp RPC workers read no weights
    assert_one_line_error(run("sync", str(cluster_file), "--from", "z"), "--from z", "name one of")
    assert_one_line_error(run("sync", str(cluster_file), "--fan-out", "0"), "fan-out")
