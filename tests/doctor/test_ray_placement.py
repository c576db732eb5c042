"""ray-node-address: the address vLLM's driver pins its Ray placement group to (VLLM_HOST_IP,
else its route's source) against the `ray start --node-ip-address` `up` renders. The fixtures
are the `route_get` probe captured through sparkrig's own run_probe on this machine and in
network namespaces (tests/fixtures/doctor/README.md); the last test runs it live in one."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkrig.config import load_cluster
from sparkrig.doctor.capture_files import load_captures
from sparkrig.doctor.collect import run_probe
from sparkrig.doctor.model import NodeCapture
from sparkrig.doctor.parse import Unreadable, route_source
from sparkrig.doctor.probes import node_probes
from sparkrig.doctor.session import check_captures
from tests.doctor.fixtures import FIXTURES, report_of
from tests.fabric.netns_lab import _ip, netns_lab, why_netns_unavailable

CHECK = ["ray-node-address"]


def _findings(case: str) -> list[tuple[str, str, str]]:
    return [(f.severity, f.node, f.seen) for f in report_of(case, only=CHECK).findings]


def test_a_head_whose_route_leaves_by_another_port_waits_on_its_placement_group() -> None:
    """Captured in a namespace with a control veth (10.10.0.2) and a fabric veth holding the
    default route (10.20.0.2): vLLM's get_ip() would answer 10.20.0.2, Ray knows 10.10.0.2."""
    [(severity, node, seen)] = _findings("ray-route-elsewhere")
    assert (severity, node) == ("error", "gpu")
    assert "node:10.20.0.2" in seen
    assert "Ray knows the node as 10.10.0.2" in seen
    assert _findings("ray-route-agrees") == []


def test_the_printed_fix_makes_the_check_quiet(tmp_path: Path) -> None:
    case = FIXTURES / "ray-route-elsewhere"
    [finding] = report_of("ray-route-elsewhere", only=CHECK).findings
    assert 'env = { VLLM_HOST_IP = "10.10.0.2" }' in finding.fix
    fixed = (
        (case / "cluster.toml")
        .read_text()
        .replace(
            'management = "10.10.0.2/24"',
            'management = "10.10.0.2/24"\nenv = { VLLM_HOST_IP = "10.10.0.2" }',
        )
    )
    (tmp_path / "cluster.toml").write_text(fixed)
    report, _ = check_captures(
        load_captures(case), load_cluster(tmp_path / "cluster.toml"), only=CHECK
    )
    assert (report.checks_run, report.findings) == (1, [])


def test_a_head_without_an_ipv4_route_or_host_ip_is_named() -> None:
    """The namespace had no route at all: ip's own `Network is unreachable`, exit 2."""
    [(severity, _, seen)] = _findings("ray-no-route")
    assert severity == "error"
    assert "no IPv4 route to 8.8.8.8" in seen


def test_one_host_ip_for_every_node_is_an_error_on_the_worker_only() -> None:
    """[env] VLLM_HOST_IP = the head's address: the head agrees with Ray, the worker repeats
    it (vLLM's 'Every node should have a unique IP address'); the plan's own values pass."""
    [(severity, node, seen)] = _findings("ray-host-ip-shared")
    assert (severity, node) == ("error", "spark2")
    assert "reports 192.168.1.11 (VLLM_HOST_IP)" in seen
    assert "another node has that address" in seen
    assert _findings("ray-pair-planned") == []


def test_the_mp_backend_is_one_skipped_line_and_other_engines_none() -> None:
    report = report_of("engine-version-declared", only=CHECK)
    assert report.findings == []
    [skipped] = report.skipped
    assert (skipped.node, skipped.checks) == ("cluster", CHECK)
    assert "engine.backend is mp" in skipped.reason
    assert report_of("vm", only=CHECK).skipped == []


def test_route_output_cut_short_is_unreadable() -> None:
    text = (FIXTURES / "ray-route-agrees" / "gpu" / "route_get.out").read_text()
    assert route_source(text) == "192.0.2.2"
    with pytest.raises(Unreadable):
        route_source(text.splitlines()[0])


UNAVAILABLE = why_netns_unavailable()


@pytest.mark.skipif(UNAVAILABLE is not None, reason=UNAVAILABLE or "")
def test_live_in_a_namespace_the_check_follows_the_default_route() -> None:
    """The probe through the netns executor: default route by the fabric veth fails, moved to
    the control veth (the address Ray is started with) passes."""
    cluster = load_cluster(FIXTURES / "ray-route-elsewhere" / "cluster.toml")
    probe = next(p for p in node_probes("/", "/", None) if p.name == "route_get")
    with netns_lab(["gpu"], []) as lab:
        ns = lab.namespace("gpu")
        for pair in (("ctl0", "ctl1"), ("fab0", "fab1")):
            _ip("-n", ns, "link", "add", pair[0], "type", "veth", "peer", "name", pair[1])
            for end in pair:
                _ip("-n", ns, "link", "set", end, "up")
        _ip("-n", ns, "address", "add", "10.10.0.2/24", "dev", "ctl0")
        _ip("-n", ns, "address", "add", "10.20.0.2/24", "dev", "fab0")
        verdicts = []
        for gateway, dev in (("10.20.0.1", "fab0"), ("10.10.0.1", "ctl0")):
            _ip("-n", ns, "route", "replace", "default", "via", gateway, "dev", dev)
            output = run_probe(lab.runners["gpu"], probe)
            capture = NodeCapture(node="gpu", reached_by=ns, outputs={"route_get": output})
            report, _ = check_captures({"gpu": capture}, cluster, only=CHECK)
            verdicts.append([(f.severity, f.seen.split(";")[0]) for f in report.findings])
    assert verdicts == [
        [
            (
                "error",
                "the driver anchors the placement group to node:10.20.0.2 (VLLM_HOST_IP "
                "unset, so the source of its route to 8.8.8.8)",
            )
        ],
        [],
    ]
