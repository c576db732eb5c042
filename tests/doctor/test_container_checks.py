"""The container-path checks on real captures of this machine (docker 28.2.2 without a daemon,
a docker socket the user may not open, podman 4.3.1 as root without a GPU), on the built docker
with the NVIDIA toolkit that cannot be seen here, on hostile `info` JSON, and for real through
the local executor. tests/fixtures/doctor/README.md names each fixture's origin."""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from sparkrig.config import load_cluster
from sparkrig.doctor.capture_files import load_captures
from sparkrig.doctor.collect import collect_node, run_probe
from sparkrig.doctor.container_info import gpu_support, runtime_info
from sparkrig.doctor.model import DoctorFinding, NodeCapture, ToolOutput
from sparkrig.doctor.probes import container_probes
from sparkrig.doctor.registry import run_checks
from sparkrig.doctor.session import container_runtime_of, contexts_for, plan_of
from sparkrig.fabric.runner import CommandResult
from sparkrig.launch.executors import LocalExecutor
from tests.doctor.fixtures import FIXTURES, report_of

CONTAINERS = FIXTURES.parent / "containers"
NAMES = [
    "container-runtime",
    "container-gpu-support",
    "container-rdma-devices",
    "container-store-space",
    "container-runtime-version-same",
]


def _findings(fixture: str, check: str) -> list[DoctorFinding]:
    return [f for f in report_of(fixture, only=[check]).findings if f.check == check]


def test_docker_without_a_daemon_is_an_error_naming_the_service_to_start() -> None:
    (finding,) = _findings("container-docker-no-daemon", "container-runtime")
    assert finding.severity == "error"
    assert "docker has no daemon answering" in finding.seen
    assert "Cannot connect to the Docker daemon at unix:///var/run/docker.sock" in finding.seen
    assert "sudo systemctl enable --now docker" in finding.fix


def test_a_docker_socket_without_permission_names_the_docker_group() -> None:
    (finding,) = _findings("container-docker-denied", "container-runtime")
    assert "docker refused its socket" in finding.seen
    assert "permission denied while trying to connect to the Docker daemon socket" in finding.seen
    assert "usermod -aG docker" in finding.fix


def test_plain_docker_info_without_a_daemon_reads_the_same() -> None:
    """`docker info` (no --format) as captured: the client section on stdout, the cause on
    stderr, exit 1 (tests/fixtures/containers/README.md)."""
    stdout = (CONTAINERS / "docker-28.2.2-info-no-daemon.stdout").read_text()
    stderr = (CONTAINERS / "docker-28.2.2-info-no-daemon.stderr").read_text()
    assert "Server:" in stdout
    capture = NodeCapture(
        node="n1",
        reached_by="local",
        outputs={
            "container_info": ToolOutput(
                command="docker info",
                returncode=0,
                stdout=f"{stdout}\nsparkrig-exit 1\n",
                stderr=stderr,
            )
        },
    )
    contexts = contexts_for(
        load_cluster(FIXTURES / "container-docker-no-daemon" / "cluster.toml"), None, ["n1"], ""
    )
    report = run_checks({"n1": capture}, contexts, only=["container-runtime"])
    assert [f.seen.split(":")[0] for f in report.findings] == ["docker has no daemon answering"]


def test_real_podman_info_names_its_store_and_version() -> None:
    info = runtime_info((CONTAINERS / "podman-4.3.1-info.json").read_text() + "\nsparkrig-exit 0")
    assert (info.answered, info.version, info.store_root) == (
        True,
        "4.3.1",
        "/var/lib/containers/storage",
    )


def test_podman_with_a_cdi_spec_passes_gpu_support() -> None:
    """The real podman capture with `container_gpu` edited to list /etc/cdi/nvidia.yaml."""
    assert _findings("container-podman", "container-gpu-support")
    assert _findings("container-podman-cdi", "container-gpu-support") == []


def test_docker_without_the_toolkit_fails_gpu_support() -> None:
    findings = _findings("container-docker-no-toolkit", "container-gpu-support")
    assert [f.node for f in findings] == ["spark1", "spark2"]
    assert "Runtimes: io.containerd.runc.v2, runc" in findings[0].seen
    assert "nvidia-ctk runtime configure --runtime=docker" in findings[0].fix


def _run_with(fixture: str, check: str, **changes: object) -> list[DoctorFinding]:
    folder = FIXTURES / fixture
    cluster = load_cluster(folder / "cluster.toml")
    captures = load_captures(folder)
    plan, _ = plan_of(cluster)
    contexts = {
        n: replace(c, **changes)  # type: ignore[arg-type]
        for n, c in contexts_for(cluster, plan, list(captures), "").items()
    }
    return run_checks(captures, contexts, only=[check]).findings


def test_gpus_none_and_no_rdma_bind_hold_their_checks_back() -> None:
    assert _run_with("container-podman", "container-gpu-support", container_gpus=False) == []
    assert _run_with("container-podman", "container-rdma-devices", container_binds_rdma=False) == []
    assert _run_with("container-podman", "container-rdma-devices", container_binds_rdma=True)


def _binds(tmp_path: Path, fixture: str, edit: tuple[str, str] = ("", "")) -> bool:
    text = (FIXTURES / fixture / "cluster.toml").read_text()
    path = tmp_path / "cluster.toml"
    path.write_text(text.replace(*edit) if edit[0] else text)
    cluster = load_cluster(path)
    plan, _ = plan_of(cluster)
    return contexts_for(cluster, plan, ["spark1"], "")["spark1"].container_binds_rdma


def test_rdma_devices_are_expected_where_the_launcher_binds_them(tmp_path: Path) -> None:
    """The launcher's rule: rdma_devices when set, else vLLM under a plan with NCCL_IB_HCA."""
    image = "[engine.container]\n"
    assert _binds(tmp_path, "container-podman")  # vLLM, a cable: NCCL over RDMA
    assert not _binds(tmp_path, "container-podman", (image, image + "rdma_devices = false\n"))
    assert not _binds(tmp_path, "container-podman", ('kind = "vllm"', 'kind = "llamacpp"'))
    assert not _binds(tmp_path, "container-docker-no-daemon")  # one node: no fabric
    assert _binds(tmp_path, "container-docker-no-daemon", (image, image + "rdma_devices = true\n"))
    assert not _binds(tmp_path, "container-host")


def test_a_host_engine_runs_no_container_check() -> None:
    """The same real podman captures under a cluster file without [engine.container]."""
    report = report_of("container-host", only=NAMES)
    assert (report.checks_run, report.findings, report.skipped) == (0, [], [])
    assert report_of("container-podman", only=NAMES).checks_run == 9


class _Answers:
    description = "fake"

    def __init__(self) -> None:
        self.ran: list[list[str]] = []

    def run(self, argv: Sequence[str], *, timeout: float | None = None) -> CommandResult:
        self.ran.append(list(argv))
        return CommandResult(argv=list(argv), returncode=0, stdout="", stderr="")


def test_container_probes_are_collected_only_for_a_contained_engine() -> None:
    host = load_cluster(FIXTURES / "container-host" / "cluster.toml")
    podman = load_cluster(FIXTURES / "container-podman" / "cluster.toml")
    assert (container_runtime_of(host), container_runtime_of(podman)) == (None, "podman")
    plain = collect_node("n1", _Answers(), model_dir="/", jit_dir="/")
    assert not any(name.startswith("container") for name in plain.outputs)
    runner = _Answers()
    contained = collect_node("n1", runner, model_dir="/", jit_dir="/", container_runtime="podman")
    assert {"container_info", "container_gpu"} <= contained.outputs.keys()
    assert ["sh", "-c", runner.ran[-2][2], "sh", "podman"] == runner.ran[-2]


HOSTILE = [
    {"version": {"Version": 4.3}, "store": {"graphRoot": ["/var/lib/containers"]}},
    {"version": "4.3.1", "store": None},
    {"ServerVersion": 28, "DockerRootDir": {"path": "/"}, "Runtimes": ["nvidia"]},
    [{"ServerVersion": "28.2.2"}],
    "28.2.2",
]


@pytest.mark.parametrize("document", HOSTILE)
def test_hostile_info_fields_read_as_absent(document: object) -> None:
    info = runtime_info(json.dumps(document) + "\nsparkrig-exit 0\n")
    assert (info.answered, info.version, info.store_root, info.runtimes) == (
        True,
        "",
        "",
        frozenset(),
    )


@pytest.mark.parametrize(
    "tail", ["sparkrig-exit ٣", "sparkrig-exit -1", "sparkrig-exit 1e400", '{"truncated": ']
)
def test_an_exit_status_that_is_not_one_is_an_answer_cut_short(tail: str) -> None:
    assert runtime_info(f"{{}}\n{tail}\n").exit_code is None


@pytest.mark.parametrize("avail", ['"83548454912"', "true", "1e400", "-5", "9" * 40, "null"])
def test_hostile_store_free_space_is_not_trusted(tmp_path: Path, avail: str) -> None:
    case = tmp_path / "case"
    shutil.copytree(FIXTURES / "container-podman", case)
    for node in ("spark1", "spark2"):
        path = case / node / "findmnt_container_store.out"
        path.write_text(path.read_text().replace("83548454912", avail))
    captures = load_captures(case)
    contexts = contexts_for(load_cluster(case / "cluster.toml"), None, list(captures), "")
    report = run_checks(captures, contexts, only=["container-store-space"])
    assert report.findings == []
    assert report.checks_run == 2


def test_gpu_probe_lines_other_than_paths_are_ignored() -> None:
    support = gpu_support("nvidia-ctk \ncdi relative.yaml\ncdi /etc/cdi/nvidia.yaml\nnoise\n")
    assert (support.nvidia_ctk, support.cdi_specs) == ("", ("/etc/cdi/nvidia.yaml",))


def test_the_probes_run_for_real_here() -> None:
    """podman answers as root; the docker client has no daemon; a runtime not installed is the
    shell's exit 127, a finding and not a skipped probe."""
    if shutil.which("podman"):
        output = run_probe(LocalExecutor(), container_probes("podman")[0])
        assert runtime_info(output.stdout).answered, output.stderr
    if shutil.which("docker"):
        output = run_probe(LocalExecutor(), container_probes("docker")[0])
        if "Cannot connect" in output.stderr:
            assert runtime_info(output.stdout).exit_code == 1
    output = run_probe(LocalExecutor(), container_probes("sparkrig-no-runtime")[0])
    assert output.skipped is None
    assert runtime_info(output.stdout).exit_code == 127
    capture = NodeCapture(node="n1", reached_by="local", outputs={"container_info": output})
    cluster = load_cluster(FIXTURES / "container-docker-no-daemon" / "cluster.toml")
    report = run_checks({"n1": capture}, contexts_for(cluster, None, ["n1"], ""))
    (finding,) = [f for f in report.findings if f.check == "container-runtime"]
    assert "docker is not installed" in finding.seen
