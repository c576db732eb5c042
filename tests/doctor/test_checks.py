"""Every doctor check fires on a fixture that has its problem and stays quiet on one that does
not. Fixtures are real tool output (this machine, network namespaces, an H200 GPU host) or, where
the tool cannot run here, built in the tool's exact format; tests/fixtures/doctor/README.md says
which, per fixture."""

from __future__ import annotations

import pytest

from sparkrig.doctor.model import DoctorReport
from sparkrig.doctor.registry import checks
from tests.doctor.fixtures import FIXTURES, report_of

# check: (fixture with the problem, fixture without it)
CASES = {
    "interface-missing": ("ring4-interface-missing", "ring4-clean"),
    "link-down": ("ring4-link-down", "ring4-clean"),
    "mtu-mismatch": ("ring4-mtu", "ring4-clean"),
    "address-missing": ("ring4-address", "ring4-clean"),
    "route-missing": ("ring4-route", "ring4-clean"),
    "forwarding-off": ("ring4-forwarding", "ring4-clean"),
    "nccl-graph-file": ("ring4-graph-file", "ring4-graph-files"),
    "link-speed": ("pair-veth-speed", "pair-clean"),
    "pcie-slot-power": ("slow-slot-power", "h200"),
    "rdma-devices": ("ring4-clean", "pair-clean"),
    "rdma-port-state": ("pair-port-down", "pair-clean"),
    "gid-index": ("pair-no-ipv4-gid", "pair-clean"),
    "roce-retransmits": ("pair-roce-retrans", "pair-clean"),
    "rdma-link-errors": ("pair-link-errors", "pair-clean"),
    "roce-mtu": ("pair-roce-mtu", "pair-clean"),
    "nccl-env": ("pair-nccl-env", "pair-clean"),
    "gpu-visible": ("gpu-missing", "h200"),
    "driver-module-match": ("driver-mismatch", "h200"),
    "gpu-clock-throttle": ("gpu-throttle", "h200"),
    "nvidia-modules-package": ("modules-other-kernel", "modules-match"),
    "page-cache-unified": ("page-cache", "page-cache-room"),
    "engine-start-memory": ("memory-short", "page-cache"),
    "swap-activity": ("swapping", "vm"),
    "clock-sync": ("chrony-unsynced", "chrony-synced"),
    "engine-unit-restart": ("unit-restarts", "unit-no-restart"),
    "model-network-fs": ("model-nfs", "vm"),
    "reasoning-parser-tokens": ("think-tokens-missing", "think-tokens-held"),
    "model-slow-disk": ("vm", "model-nvme"),
    "jit-cache-shared": ("jit-nfs", "vm"),
    "jit-cache-free": ("jit-small", "vm"),
    "nvme-apst": ("apst-default", "apst-long"),
    "same-kernel": ("fleet-mixed", "fleet-same"),
    "same-page-size": ("fleet-mixed", "fleet-same"),
    "same-driver": ("fleet-mixed", "fleet-same"),
    "same-cuda": ("fleet-mixed", "fleet-same"),
    "same-nccl": ("fleet-mixed", "fleet-same"),
    "same-engine": ("fleet-mixed", "fleet-same"),
    "engine-version-declared": ("engine-version-other", "engine-version-declared"),
    "sm-clock-spread": ("fleet-mixed", "fleet-same"),
    "same-python-stack": ("python-stack-mixed", "python-stack-same"),
    "same-image-python-stack": ("image-stack-mixed", "image-stack-same"),
    "clock-offset": ("ring4-clock-skew", "ring4-clean"),
    "logind-remove-ipc": ("logind-remove-ipc", "logind-root"),
    "rdma-user-limits": ("rdma-limits-missing", "rdma-limits-ok"),
    "ray-node-address": ("ray-route-elsewhere", "ray-route-agrees"),
    "container-runtime": ("container-docker-no-daemon", "container-podman"),
    "container-gpu-support": ("container-podman", "container-docker-nvidia"),
    "container-rdma-devices": ("container-podman", "container-docker-nvidia"),
    "container-store-space": ("container-podman", "container-docker-nvidia"),
    "container-runtime-version-same": ("container-podman-mixed", "container-podman"),
    "node-privilege": ("prereq-missing", "prereq-ready"),
    "node-sparkrig": ("prereq-missing", "prereq-ready"),
}


def test_every_check_has_a_fixture_pair() -> None:
    names = {c.name for c in checks()}
    assert names == set(CASES), f"without a pair: {names - set(CASES)}; stale: {set(CASES) - names}"
    assert len(names) >= 25
    for problem, clean in CASES.values():
        assert (FIXTURES / problem).is_dir()
        assert (FIXTURES / clean).is_dir()


@pytest.mark.parametrize("check", sorted(CASES))
def test_fires_on_the_problem(check: str) -> None:
    report = report_of(CASES[check][0], only=[check])
    hits = [f for f in report.findings if f.check == check]
    assert hits, f"{check} stayed quiet on {CASES[check][0]}; skipped: {report.skipped}"
    for hit in hits:
        assert hit.seen
        assert hit.fix
        assert hit.why
        assert hit.source


@pytest.mark.parametrize("check", sorted(CASES))
def test_quiet_when_clean(check: str) -> None:
    report = report_of(CASES[check][1], only=[check])
    assert report.checks_run >= 1, f"{check} did not run on {CASES[check][1]}: {report.skipped}"
    assert [f for f in report.findings if f.check == check] == []


def test_each_ring_fault_is_named_with_its_fix() -> None:
    expected = {
        "ring4-mtu": ("mtu-mismatch", "b", "ip link set dev p0a mtu 9000"),
        "ring4-route": ("route-missing", "a", "ip route replace 10.20.4.1/32 via 10.20.0.2"),
        "ring4-forwarding": ("forwarding-off", "b", "sysctl -w net.ipv4.ip_forward=1"),
        "ring4-link-down": ("link-down", "d", "ip link set dev p1b up"),
    }
    for fixture, (check, node, fix) in expected.items():
        errors = [f for f in report_of(fixture).findings if f.severity == "error"]
        named = [f for f in errors if f.node == node]
        assert [f.check for f in named] == [check], (fixture, errors)
        assert fix in named[0].fix
        # the one other error allowed: the peer of a downed link loses carrier too
        assert all(f.check == check for f in errors), (fixture, errors)
    assert [f for f in report_of("ring4-clean").findings if f.severity == "error"] == []


def test_nccl_graph_file_names_the_node_the_path_and_the_apply() -> None:
    """ring4-graph-file: a's graph removed, c's holding a's; b and d as the plan wrote them."""
    findings = report_of("ring4-graph-file", only=["nccl-graph-file"]).findings
    assert [(f.severity, f.node) for f in findings] == [("error", "a"), ("error", "c")]
    assert findings[0].seen.startswith("/tmp/sparkrig-ring4-fixture/nccl-graph-a.xml is missing")
    assert findings[1].seen.startswith(
        "/tmp/sparkrig-ring4-fixture/nccl-graph-c.xml differs from the plan's (sha256 a899cb485235"
    )
    assert all("run `sparkrig fabric apply CLUSTER --apply`" in f.fix for f in findings)
    assert [f for f in report_of("ring4-graph-file").findings if f.severity == "error"] == findings


def test_nccl_graph_file_does_not_run_where_the_plan_has_no_graph() -> None:
    from sparkrig.config.loading import parse_cluster
    from sparkrig.doctor.capture_files import load_captures
    from sparkrig.doctor.session import check_captures

    assert report_of("pair-clean", only=["nccl-graph-file"]).checks_run == 0
    folder = FIXTURES / "ring4-graph-file"
    text = (folder / "cluster.toml").read_text() + "nccl_graph = false\n"  # [fabric] is last
    report, _ = check_captures(load_captures(folder), parse_cluster(text), only=["nccl-graph-file"])
    assert (report.checks_run, report.findings, report.skipped) == (0, [], [])


def _with_node_files(text: str) -> DoctorReport:
    """ring4-graph-files with node a's `node_files` output replaced."""
    from sparkrig.config.loading import load_cluster
    from sparkrig.doctor.capture_files import load_captures
    from sparkrig.doctor.model import ToolOutput
    from sparkrig.doctor.session import check_captures

    folder = FIXTURES / "ring4-graph-files"
    captures = load_captures(folder)
    node = captures["a"]
    output = ToolOutput(command="sh", returncode=0, stdout=text)
    captures["a"] = node.model_copy(update={"outputs": dict(node.outputs) | {"node_files": output}})
    cluster = load_cluster(folder / "cluster.toml")
    return check_captures(captures, cluster, only=["nccl-graph-file"])[0]


def test_nccl_graph_file_says_a_folder_an_unreadable_file_and_unreadable_output() -> None:
    path = "/tmp/sparkrig-ring4-fixture/nccl-graph-a.xml"
    (folder,) = _with_node_files(f"folder {path}\n").findings
    assert "is a folder" in folder.seen
    assert folder.fix.startswith(f"remove it (`rmdir {path}`), then run `sparkrig fabric apply")
    (unreadable,) = _with_node_files(f"unreadable {path}\n").findings
    assert unreadable.fix.startswith(f"`chmod a+r {path}`")
    garbled = _with_node_files("sha256: No such file or directory\n")
    assert garbled.findings == []
    assert "output unreadable" in garbled.skipped[0].reason


def test_link_speed_reads_ethtool_where_it_ran() -> None:
    """pair-veth-ethtool holds only ethtool's real output of the veths (10000Mb/s), no sysfs."""
    findings = report_of("pair-veth-ethtool", only=["link-speed"]).findings
    assert [f.node for f in findings] == ["spark1", "spark2"]
    assert "enp1s0f0np0 10 Gb/s" in findings[0].seen


def test_a_planned_rdma_device_missing_beside_another_is_an_error() -> None:
    """No RDMA at all is a warning (ring4-clean: NCCL over TCP); one planned device gone while
    the other is there is an error that names both."""
    findings = report_of("pair-rdma-missing", only=["rdma-devices"]).findings
    assert [(f.severity, f.node) for f in findings] == [("error", "spark1")]
    assert "RDMA device roceP2p1s0f0 is not on the node; it has rocep1s0f0" in findings[0].seen
    assert "[[nodes.ports]] rdma names" in findings[0].fix
    none_at_all = report_of("ring4-clean", only=["rdma-devices"]).findings
    assert none_at_all
    assert {f.severity for f in none_at_all} == {"warning"}


def test_an_unset_utilisation_is_judged_at_the_named_vllm_releases_default() -> None:
    """vLLM 0.30's own default is 0.92 (its committed parser data); without a cluster file
    doctor keeps its 0.85."""
    from sparkrig.config.loading import load_cluster
    from sparkrig.doctor.session import contexts_for

    cluster = load_cluster(FIXTURES / "engine-version-other" / "cluster.toml")
    assert contexts_for(cluster, None, ["n1"], "")["n1"].gpu_memory_utilization == 0.92
    assert contexts_for(None, None, ["n1"], "")["n1"].gpu_memory_utilization == 0.85


def _vocab_report(fixture: str, parser: str, probe_text: str | None = None) -> DoctorReport:
    """The fixture's capture under its cluster file with another --reasoning-parser (and, if
    given, another model_vocab output)."""
    from sparkrig.config.loading import load_cluster
    from sparkrig.doctor.capture_files import load_captures
    from sparkrig.doctor.model import ToolOutput
    from sparkrig.doctor.session import check_captures

    folder = FIXTURES / fixture
    cluster = load_cluster(folder / "cluster.toml")
    assert cluster.engine is not None
    cluster = cluster.model_copy(
        update={"engine": cluster.engine.model_copy(update={"reasoning_parser": parser})}
    )
    captures = load_captures(folder)
    if probe_text is not None:
        node = captures["n1"]
        outputs = dict(node.outputs) | {
            "model_vocab": ToolOutput(command="sh", returncode=0, stdout=probe_text)
        }
        captures = {"n1": node.model_copy(update={"outputs": outputs})}
    report, _ = check_captures(captures, cluster, only=["reasoning-parser-tokens"])
    return report


def test_reasoning_parser_tokens_says_what_vllm_does_without_them() -> None:
    """The bundled model's vocabulary (no <think>): deepseek_r1 stops vLLM at start (seen live
    on 0.26.0), deepseek_v3 fails each thinking request, deepseek_v4 finds the tags as text
    only; a tokenizer that holds them, a folder with no tokenizer.json and a parser sparkrig
    does not know are not findings, the last said as skipped."""
    r1 = _vocab_report("think-tokens-missing", "deepseek_r1").findings
    assert [(f.severity, f.node) for f in r1] == [("error", "n1")]
    assert "has no <think> or </think>: vllm serve stops at start" in r1[0].seen
    assert "/models/smollm2-135m-instruct/tokenizer.json" in r1[0].seen
    (v3,) = _vocab_report("think-tokens-missing", "deepseek_v3").findings
    assert (v3.severity, "every request that turns thinking on fails" in v3.seen) == ("error", True)
    (v4,) = _vocab_report("think-tokens-missing", "deepseek_v4").findings
    assert v4.severity == "warning"
    assert "only as text" in v4.seen
    assert _vocab_report("think-tokens-held", "deepseek_v4").findings == []
    mistral = _vocab_report("think-tokens-held", "mistral").findings
    assert "has no [THINK] or [/THINK]" in mistral[0].seen
    absent = _vocab_report("think-tokens-missing", "deepseek_r1", "no-tokenizer-json /m/t.json\n")
    assert absent.findings == []
    unknown = _vocab_report("think-tokens-missing", "granite")
    assert unknown.findings == []
    assert any("granite" in str(s) for s in unknown.skipped)
