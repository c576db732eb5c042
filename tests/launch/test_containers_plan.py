"""The container path without a runtime: what each process's `run` holds, what the cluster file
refuses, and how the runtime's inspect output is read (real podman 4.3.1 captures in
tests/fixtures/containers/, hostile shapes made up)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sparkrig.config import load_cluster, parse_cluster
from sparkrig.config.container import ContainerSettings
from sparkrig.engines.launch_spec import ProcessSpec
from sparkrig.errors import ConfigError
from sparkrig.launch.cluster_plan import plan_launch
from sparkrig.launch.containers import parse_container_state, parse_image_identity

ROOT = Path(__file__).parent.parent.parent
CAPTURES = ROOT / "tests" / "fixtures" / "containers"
EXAMPLE = ROOT / "examples" / "pair-vllm-container.toml"


def _plan(runtime: str = "docker"):
    text = EXAMPLE.read_text().replace('runtime = "docker"', f'runtime = "{runtime}"')
    return plan_launch(parse_cluster(text), local_state_dir=Path("/state"))


def test_docker_runs_get_gpus_rdma_the_jit_volume_and_env_by_name_only() -> None:
    plan = _plan("docker")
    head = plan.processes[-1]
    argv = head.argv
    assert argv[:2] == ["docker", "run"]
    assert "--gpus" in argv
    assert "/dev/infiniband" in argv  # the pair's fabric runs NCCL over RDMA
    assert "/var/cache/vllm-jit:/var/cache/vllm-jit" in argv  # node-local JIT root, read-write
    assert "sparkrig.cluster=pair-vllm-container" in argv
    image = argv.index("registry.lan/vllm-gb10:0.30")
    assert argv[image + 1 : image + 3] == ["vllm", "serve"]
    values = {var.value for var in head.env}
    assert not values & set(argv[:image]), "env values must not appear on the command line"
    assert any("is a tag, not a digest" in w for w in plan.warnings)


def test_podman_asks_for_gpus_through_cdi() -> None:
    argv = _plan("podman").processes[0].argv
    assert argv[argv.index("--device") + 1] == "nvidia.com/gpu=all"
    assert "--gpus" not in argv


def test_a_llamacpp_cluster_binds_the_model_folder_and_no_rdma(tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    text = f"""name = "c"
[[nodes]]
name = "a"
[executor]
kind = "local"
[engine]
kind = "llamacpp"
binary = "/opt/llama-server"
[engine.container]
runtime = "podman"
image = "localhost/x@sha256:{"0" * 64}"
gpus = "none"
[model]
path = "{model}"
"""
    plan = plan_launch(parse_cluster(text), local_state_dir=tmp_path)
    argv = plan.processes[0].argv
    assert f"{tmp_path}:{tmp_path}:ro" in argv
    assert "/dev/infiniband" not in argv
    assert "nvidia.com/gpu=all" not in argv
    assert not plan.warnings


@pytest.mark.parametrize(
    ("table", "needle"),
    [
        ('runtime = "podman"', "needs an image"),
        ('image = "x"', "runtime is 'host'"),
        ('runtime = "docker"\nimage = "x"\nulimits = { memlock = "lots" }', "SOFT[:HARD]"),
        ('runtime = "lxc"\nimage = "x"', "runtime"),
    ],
)
def test_the_cluster_file_refuses_a_container_table_that_cannot_run(
    tmp_path: Path, table: str, needle: str
) -> None:
    path = tmp_path / "c.toml"
    body = EXAMPLE.read_text()
    start = body.index("[engine.container]")
    end = body.index("[model]")
    path.write_text(body[:start] + f"[engine.container]\n{table}\n\n" + body[end:])
    with pytest.raises(ConfigError) as refused:
        load_cluster(path)
    assert needle in str(refused.value)


def test_a_real_image_inspect_gives_layers_and_a_config_digest() -> None:
    identity = parse_image_identity((CAPTURES / "podman-4.3.1-image-inspect.json").read_text())
    assert identity is not None
    assert identity.layers
    assert all(layer.startswith("sha256:") for layer in identity.layers)
    assert identity.config_digest.startswith("sha256:")
    assert identity.differences(identity) == []


def test_real_container_inspects_read_running_and_killed() -> None:
    running = parse_container_state(
        (CAPTURES / "podman-4.3.1-container-inspect-running.json").read_text()
    )
    killed = parse_container_state(
        (CAPTURES / "podman-4.3.1-container-inspect-killed.json").read_text()
    )
    assert running is not None
    assert killed is not None
    assert running.running
    assert running.ours("capture")
    assert not running.ours("other")
    assert running.describe().startswith("running since 20")
    assert killed.describe() == "exited 137"


def test_an_oom_kill_and_restarts_are_said() -> None:
    item = json.loads((CAPTURES / "podman-4.3.1-container-inspect-killed.json").read_text())
    item[0]["State"]["OOMKilled"] = True
    item[0]["RestartCount"] = 2
    state = parse_container_state(json.dumps(item))
    assert state is not None
    assert state.describe() == "exited 137, OOMKilled, 2 restarts"


@pytest.mark.parametrize(
    "stdout",
    [
        "",
        "[]",
        "{",
        "null",
        '[{"RootFS": {"Layers": [1, 2]}}]',
        '[{"RootFS": "layers"}]',
        '["image"]',
    ],
)
def test_hostile_image_inspect_answers_give_no_identity(stdout: str) -> None:
    assert parse_image_identity(stdout) is None


def test_hostile_container_fields_are_not_trusted() -> None:
    state = parse_container_state(
        '[{"Name": 5, "State": {"Running": "yes", "ExitCode": true, "OOMKilled": 1}, '
        '"RestartCount": -3, "Config": {"Labels": {"sparkrig.cluster": 7}}}]'
    )
    assert state is not None
    assert not state.running
    assert state.exit_code is None
    assert not state.oom_killed
    assert state.restart_count == 0
    assert state.labels == {}


def test_the_default_settings_run_on_the_host() -> None:
    assert not ContainerSettings().contained


def _result(stderr: str, code: int = 1) -> Any:
    from sparkrig.fabric.runner import CommandResult

    return CommandResult(argv=["docker", "info"], returncode=code, stdout="", stderr=stderr)


@pytest.mark.parametrize(
    ("stderr", "code", "needle"),
    [
        (  # real: docker 28.2.2 here, no daemon
            "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker "
            "daemon running?",
            1,
            "systemctl enable --now docker",
        ),
        (  # real: the same client as `nobody` against a root-owned socket (doctor's capture)
            "permission denied while trying to connect to the Docker daemon socket at "
            "unix:///tmp/cap/docker.sock",
            1,
            "docker group",
        ),
        ("sh: 1: docker: not found", 127, "not installed"),
    ],
)
def test_a_runtime_that_does_not_answer_is_one_line_naming_the_fix(
    stderr: str, code: int, needle: str
) -> None:
    from sparkrig.engines.launch_spec import ContainerRun
    from sparkrig.launch.container_checks import runtime_failure

    run = ContainerRun(runtime="docker", image="x", name="n", labels={})
    line = runtime_failure("spark2", run, _result(stderr, code))
    assert line.startswith("node spark2: ")
    assert needle in line
    assert " — " in line


def _ring_in_docker(container: str = "") -> list[ProcessSpec]:
    text = (ROOT / "examples" / "ring4-vllm.toml").read_text()
    text += f'\n[engine.container]\nruntime = "docker"\nimage = "r/vllm@sha256:{"0" * 64}"\n'
    return plan_launch(parse_cluster(text + container), local_state_dir=Path("/state")).processes


def test_each_ring_rank_gets_its_own_graph_file_bound_read_only_at_the_same_path() -> None:
    """NCCL_GRAPH_FILE names a file `fabric apply` wrote on the node: the container sees it at
    that path, read-only, bound with --mount so a missing file stops the run (docker's --volume
    would make a folder there); per node, so it is not among the paths proven equal."""
    processes = _ring_in_docker()
    assert sorted(p.node for p in processes) == ["a", "b", "c", "d"]
    for process in processes:
        path = f"/etc/sparkrig/nccl-graph-{process.node}.xml"
        assert {var.name: var.value for var in process.env}["NCCL_GRAPH_FILE"] == path
        argv = process.argv
        bind = f"type=bind,source={path},target={path},readonly"
        assert argv.count(bind) == 1
        assert argv[argv.index(bind) - 1] == "--mount"
        assert argv.index(bind) < argv.index(f"r/vllm@sha256:{'0' * 64}")
        assert process.container is not None
        assert path not in process.container.verified_paths + process.container.created_paths
    assert "--mount" not in _plan("docker").processes[0].argv  # a pair has no graph file


def test_a_mount_of_the_graph_folder_is_not_bound_twice() -> None:
    processes = _ring_in_docker('mounts = [{ source = "/etc/sparkrig", verify = false }]\n')
    for process in processes:
        assert "/etc/sparkrig:/etc/sparkrig:ro" in process.argv
        assert "--mount" not in process.argv
