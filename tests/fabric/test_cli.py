"""`sparkrig fabric …` as a user runs it: bad input is one line naming cause and fix, a non-zero
exit and no traceback; plan, --json, --out, and apply without --apply changing nothing."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import SPARKRIG

EXAMPLES = Path(__file__).parents[2] / "examples"
RING4 = str(EXAMPLES / "ring4.toml")


def _run(*args: str, env_state: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = None
    if env_state is not None:
        env = {**os.environ, "SPARKRIG_STATE_DIR": str(env_state)}
    return subprocess.run([SPARKRIG, *args], capture_output=True, text=True, env=env, check=False)


def _bad(tmp_path: Path, text: str, *extra: str) -> str:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    done = _run("fabric", "plan", str(path), *extra)
    assert done.returncode == 2, done
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert lines[0].startswith("error: ")
    assert " — " in lines[0]
    return lines[0]


NODES = (
    '\n[[nodes]]\nname = "a"\n[[nodes]]\nname = "b"\n[[nodes]]\nname = "c"\n[[nodes]]\nname = "d"\n'
)
RING = 'cables = ["a.p0 <-> b.p1", "b.p0 <-> c.p1", "c.p0 <-> d.p1", "d.p0 <-> a.p1"]\n'


@pytest.mark.parametrize(
    ("text", "extra", "expected"),
    [
        ('cables = ["a.p0 <-> b.p1", "a.p0 <-> c.p1"]' + NODES, (), "is in two cables"),
        ('cables = ["a.p0 <-> x.p1"]' + NODES, (), "names node x, which is not in [[nodes]]"),
        ('cables = ["a.p0 <-> a.p1"]' + NODES, (), "joins node a to itself"),
        ('cables = ["a.p0 <-> b.p1"]' + NODES, (), "nodes c, d have no cable path to a"),
        (RING + NODES, ("--tp", "5"), "tensor_parallel_size 5 needs 5 nodes"),
        (RING + NODES, ("--tp", "3"), "nodes a,b,c form a line, not a closed collective"),
        (RING + NODES + '[fabric]\nsubnet_pool = "10.20.0.0/22"\n', (), "holds 4 /24 subnets"),
        (RING + NODES + "[fabric]\nmtu = 65000\n", (), "mtu 65000 is out of range"),
        (RING + NODES + "[fabric\n", (), "line 11, column 8"),
    ],
)
def test_bad_input_is_one_line(
    tmp_path: Path, text: str, extra: tuple[str, ...], expected: str
) -> None:
    assert expected in _bad(tmp_path, text, *extra)


def test_overlapping_pool_via_cli(tmp_path: Path) -> None:
    text = (
        'cables = ["a.p0 <-> b.p1"]\n[[nodes]]\nname = "a"\nmanagement = "10.20.5.1/24"\n'
        '[[nodes]]\nname = "b"\nmanagement = "10.20.5.2/24"\n'
    )
    assert "overlaps the management network 10.20.5.0/24" in _bad(tmp_path, text)


def test_missing_file_is_one_line() -> None:
    done = _run("fabric", "plan", "/nonexistent/cluster.toml")
    assert done.returncode == 2
    assert "does not exist — pass the path" in done.stderr
    assert "Traceback" not in done.stderr


def test_plan_prints_ranks_cables_and_relays() -> None:
    done = _run("fabric", "plan", RING4)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "ring4: ring-4, 4 nodes, 4 cables, MTU 9000" in out
    assert "ranks in cable order" in out
    assert "10.20.0.0/24" in out
    assert "a → b → c (relayed)" in out
    assert "IPv4 forwarding on: b, c" in out


def test_plan_json_and_out(tmp_path: Path) -> None:
    done = _run("fabric", "plan", RING4, "--json", "--out", str(tmp_path / "files"))
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["rank_order"] == ["a", "b", "c", "d"]
    assert (tmp_path / "files" / "c" / "netplan-60-sparkrig-fabric.yaml").exists()
    assert (tmp_path / "files" / "c" / "nccl-graph-c.xml").exists()


def test_apply_without_apply_prints_commands_and_changes_nothing(tmp_path: Path) -> None:
    done = _run(
        "fabric", "apply", RING4, "--executor", "netns", "--netns-prefix", "x-", env_state=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert "ip route add 10.20.4.1/32 via 10.20.0.2 dev enp1s0f0np0 src 10.20.0.1" in done.stdout
    assert "nothing changed — add --apply" in done.stdout
    assert not list(tmp_path.rglob("*.json"))


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("--executor", "netns"), "node a has no namespace — add --netns a=NAME"),
        (("--executor", "netns", "--netns", "zz=ns"), "is not NODE=NAMESPACE for a known node"),
        (("--executor", "local"), "the local executor changes only this machine"),
        (("--executor", "ssh"), "node a has no ssh destination"),
        (("--executor", "telnet"), "--executor telnet is not known"),
        (("--restore",), "nothing to restore"),
        ((), "the cluster file has no [executor] — give it one (ssh), pass --executor ssh or "),
    ],
)
def test_apply_usage_errors(tmp_path: Path, args: tuple[str, ...], expected: str) -> None:
    done = _run("fabric", "apply", RING4, *args, env_state=tmp_path)
    assert done.returncode != 0
    assert expected in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_apply_follows_the_files_executors_as_up_does(tmp_path: Path) -> None:
    """No --executor: each node is reached by the file's [executor] (ssh to its `ssh` field),
    not by a local default that would need --node."""
    done = _run("fabric", "apply", str(EXAMPLES / "ring4-vllm.toml"), env_state=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "a (admin@spark-a)" in done.stdout
    assert "d (admin@spark-d)" in done.stdout
    assert "nothing changed — add --apply" in done.stdout


def test_apply_options_still_beat_the_file(tmp_path: Path) -> None:
    ring = str(EXAMPLES / "ring4-vllm.toml")
    done = _run("fabric", "apply", ring, "--netns-prefix", "x-", env_state=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "a (x-a)" in done.stdout
    assert "admin@spark-a" not in done.stdout


def _discover(tmp_path: Path, text: str, *extra: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "cluster.toml"
    path.write_text(text)
    return _run("fabric", "discover", str(path), *extra, env_state=tmp_path)


PAIR = 'cables = ["a.p0 <-> b.p1"]\n[[nodes]]\nname = "a"\n[[nodes]]\nname = "b"\n'


@pytest.mark.parametrize(
    ("tables", "extra", "expected"),
    [
        (
            "",
            (),
            "the cluster file has no [executor] — give it one (ssh), or pass --executor ssh (or "
            "netns for rehearsals): discover needs every node at once",
        ),
        (
            '[executor]\nkind = "local"\n',
            (),
            "the cluster file reaches a, b through the local executor, all this machine: "
            "discover needs every node at once — use --executor ssh (or netns for rehearsals)",
        ),
        (
            "",
            ("--executor", "local"),
            "discover needs every node at once — use --executor ssh (or netns for rehearsals)",
        ),
    ],
)
def test_discover_refuses_what_cannot_reach_every_node(
    tmp_path: Path, tables: str, extra: tuple[str, ...], expected: str
) -> None:
    done = _discover(tmp_path, PAIR + tables, *extra)
    assert done.returncode == 2
    assert done.stderr.strip() == f"error: {expected}"


def test_discover_reaches_the_nodes_the_file_names(tmp_path: Path) -> None:
    """No --executor: discover goes to the file's netns executors (here absent namespaces, so
    it stops at the first with that executor's own error), not to ssh."""
    own = PAIR.replace(
        'name = "a"', 'name = "a"\nexecutor = { kind = "netns", target = "sr-absent-a" }'
    )
    own = own.replace(
        'name = "b"', 'name = "b"\nexecutor = { kind = "netns", target = "sr-absent-b" }'
    )
    done = _discover(tmp_path, own)
    assert done.returncode != 0
    assert "network namespace sr-absent-a does not exist" in done.stderr
    assert "ssh" not in done.stderr
