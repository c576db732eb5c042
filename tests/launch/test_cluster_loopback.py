"""A two-node llama.cpp RPC cluster on this machine's loopback (the nodes' management addresses
127.0.0.1 and 127.0.0.2, local executors): `up` refuses a second start, `--replace` restarts,
`logs NODE` reads a node's log, `down` stops it all."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sparkrig import defaults
from sparkrig.launch.local import free_port
from sparkrig.launch.state import load_state, process_start_ticks
from tests.launch.test_cluster_bad_input import assert_one_line_error, run

NAME = "loopback-rpc"


def loopback_cluster(path: Path, name: str = NAME, tables: str = "") -> None:
    """`tables`: more TOML between [engine] and [model] (an [engine.container])."""
    path.write_text(f"""name = "{name}"
cables = ["a.p0 <-> b.p1"]
[[nodes]]
name = "a"
management = "127.0.0.1/8"
[[nodes]]
name = "b"
management = "127.0.0.2/8"
[executor]
kind = "local"
[engine]
kind = "llamacpp"
api_host = "127.0.0.1"
port = {free_port("127.0.0.1")}
rpc_port = {free_port("127.0.0.2")}
rpc_network = "control"  # one machine: the cable's addresses are not configured here
threads = 1
stall_window_s = 60
{tables}
[model]
path = "bundled"
served_name = "{defaults.BUNDLED_MODEL_ALIAS}"
""")


def test_up_refuses_twice_replace_restarts_logs_and_down(tmp_path: Path, engine: Any) -> None:
    cluster_file = tmp_path / "loopback.toml"
    loopback_cluster(cluster_file)
    try:
        first = run("up", str(cluster_file), "--apply")
        assert first.returncode == 0, first.stderr
        before = load_state(NAME)
        assert before is not None

        assert_one_line_error(
            run("up", str(cluster_file), "--apply"), "already recorded as up", "--replace"
        )

        again = run("up", str(cluster_file), "--apply", "--replace")
        assert again.returncode == 0, again.stderr
        after = load_state(NAME)
        assert after is not None
        for old in before.started:
            assert process_start_ticks(old.pid) != old.pid_start_ticks  # replaced: old gone
        assert {r.pid for r in after.started}.isdisjoint({r.pid for r in before.started})

        logs = run("logs", str(cluster_file), "b", "-n", "5")
        assert logs.returncode == 0
        assert "Accepted client connection" in logs.stdout or "RPC" in logs.stdout
        assert_one_line_error(run("logs", str(cluster_file), "z"), "node z has no recorded process")
    finally:
        down = run("down", str(cluster_file), "--apply")
    assert down.returncode == 0, down.stderr
    assert load_state(NAME) is None
    for record in after.started:
        assert process_start_ticks(record.pid) != record.pid_start_ticks
