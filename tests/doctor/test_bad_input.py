"""Bad input to doctor, each one line while every other check still runs: a tool missing on the
node (this machine has no nvidia-smi, chronyc or ibv_devinfo), truncated or garbage tool output,
a cluster file naming interfaces the node lacks, a node ssh cannot reach, a --load folder that
holds no capture, a node that stops answering part way."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from sparkrig.cli import app
from sparkrig.doctor.collect import collect_node
from sparkrig.fabric.runner import CommandResult
from tests.doctor.fixtures import FIXTURES
from tests.fabric.netns_lab import netns_lab, why_netns_unavailable


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["doctor", *args])
    return result.exit_code, result.output


def _json(*args: str) -> tuple[int, dict[str, Any]]:
    code, output = _run(*args, "--json")
    return code, json.loads(output)


def test_missing_tools_on_this_machine_are_one_skipped_line_each() -> None:
    if shutil.which("nvidia-smi") or shutil.which("chronyc"):
        return  # the machine has them; the fixture test of `vm` covers the same skips
    code, report = _json()
    reasons = {s["reason"]: s["checks"] for s in report["skipped"]}
    assert code == 0
    assert reasons[
        "nvidia-smi is not installed — install the NVIDIA driver utilities (nvidia-utils-<branch>)"
    ] == ["gpu-visible", "driver-module-match", "gpu-clock-throttle"]
    assert reasons["chronyc is not installed — apt install chrony"] == ["clock-sync"]
    assert report["checks_run"] >= 10  # memory, swap, disks, kernel log … still ran
    code, output = _run()
    assert "skipped on" in output
    assert "apt install chrony" in output


def test_truncated_and_garbage_output_skip_only_the_checks_that_read_it(tmp_path: Path) -> None:
    case = tmp_path / "ring"
    shutil.copytree(FIXTURES / "ring4-mtu", case)
    link = case / "a" / "ip_link.out"
    link.write_text(link.read_text()[: len(link.read_text()) // 2])  # cut mid-JSON
    (case / "c" / "net_sysfs.out").write_text("<html><body>502 Bad Gateway</body></html>\n")
    code, report = _json(str(case / "cluster.toml"), "--load", str(case))
    skipped = {(s["node"], tuple(s["checks"])): s["reason"] for s in report["skipped"]}
    assert skipped.keys() == {
        ("a", ("interface-missing", "link-down", "mtu-mismatch")),
        ("c", ("forwarding-off", "link-speed")),
    }
    assert "not JSON" in skipped["a", ("interface-missing", "link-down", "mtu-mismatch")]
    assert "not `path:value`" in skipped["c", ("forwarding-off", "link-speed")]
    # b's MTU fault is still found, and a's routes and addresses were still checked
    assert code == 1
    assert [(f["check"], f["node"]) for f in report["findings"] if f["severity"] == "error"] == [
        ("mtu-mismatch", "b")
    ]


def test_interfaces_the_node_lacks_are_one_line_each() -> None:
    case = FIXTURES / "ring4-interface-missing"
    code, report = _json(str(case / "cluster.toml"), "--load", str(case))
    missing = [f for f in report["findings"] if f["check"] == "interface-missing"]
    assert code == 1
    assert [(f["node"], f["seen"].split()[0]) for f in missing] == [("a", "enp9s0f0")]
    assert "fabric discover" in missing[0]["fix"]


def test_a_node_ssh_cannot_reach_is_one_line(tmp_path: Path) -> None:
    config = tmp_path / "ssh_config"
    config.write_text("Host *\n  Port 9\n")  # the discard port: nothing listens, refused at once
    cluster = tmp_path / "cluster.toml"
    cluster.write_text(
        'name = "far"\n[executor]\nkind = "ssh"\nssh_config = "' + str(config) + '"\n'
        '[[nodes]]\nname = "far1"\nssh = "127.0.0.1"\n'
    )
    code, report = _json(str(cluster))
    assert code == 1
    [finding] = report["findings"]
    assert (finding["check"], finding["node"]) == ("node-reachable", "far1")
    assert "Connection refused" in finding["seen"]


def test_load_of_a_folder_without_captures_is_a_one_line_error(tmp_path: Path) -> None:
    script = Path(sys.executable).parent / "sparkrig"
    done = subprocess.run(
        [str(script), "doctor", "--load", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert "holds no node folders" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_node_that_stops_answering_part_way_skips_the_rest_once_each() -> None:
    """The namespace is really deleted after the fifth command; what ran is kept and checked."""
    if why_netns_unavailable() is not None:
        pytest.skip("no network namespaces here")
    with netns_lab(["n"], []) as lab:
        real = lab.runners["n"]

        class DiesAfterFive:
            description = real.description
            calls = 0

            def run(self, argv: Sequence[str], *, timeout: float | None = None) -> CommandResult:
                self.calls += 1
                if self.calls == 6:
                    subprocess.run(["ip", "netns", "del", lab.namespace("n")], check=True)
                return real.run(argv, timeout=timeout)

        capture = collect_node("n", DiesAfterFive(), model_dir="/", jit_dir="/")
    ran = [name for name, output in capture.outputs.items() if output.skipped is None]
    stopped = [name for name, o in capture.outputs.items() if "stopped answering" in str(o.skipped)]
    assert ran == ["uname", "pagesize", "clock", "ip_addr", "ip_route"]
    assert stopped[0] == "ip_link"
    assert "does not exist" in str(capture.outputs["ip_link"].skipped)
