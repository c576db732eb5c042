"""Cluster files: what loads, and every bad input's one-line message (cause and fix)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkrig import defaults
from sparkrig.config import load_cluster, parse_cluster
from sparkrig.errors import ConfigError, UsageError

EXAMPLES = Path(__file__).parents[2] / "examples"

PAIR = """
cables = ["a.p0 <-> b.p1"]

[[nodes]]
name = "a"

[[nodes]]
name = "b"
"""


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.toml")), ids=lambda p: p.stem)
def test_every_example_loads(path: Path) -> None:
    cluster = load_cluster(path)
    assert cluster.name == path.stem
    assert cluster.cables or len(cluster.nodes) == 1  # one box has no cable


def test_nodes_get_dgx_spark_ports_by_default() -> None:
    cluster = parse_cluster(PAIR)
    ports = cluster.nodes[0].ports
    assert [p.name for p in ports] == ["p0", "p1"]
    assert [(f.netdev, f.rdma) for f in ports[0].functions] == [
        ("enp1s0f0np0", "rocep1s0f0"),
        ("enP2p1s0f0np0", "roceP2p1s0f0"),
    ]
    assert str(cluster.cables[0]) == "a.p0 <-> b.p1"
    assert cluster.fabric.mtu == defaults.FABRIC_MTU


def test_explicit_ports_and_unicode_arrow() -> None:
    cluster = parse_cluster(
        """
cables = ["x.left ↔ y.right"]
[[nodes]]
name = "x"
[[nodes.ports]]
name = "left"
functions = [{ netdev = "l0", rdma = "mlx5_0" }]
[[nodes]]
name = "y"
[[nodes.ports]]
name = "right"
functions = [{ netdev = "r0", rdma = "mlx5_0" }, { netdev = "r1", rdma = "mlx5_1" }]
"""
    )
    assert cluster.cables[0].a.port == "left"
    assert len(cluster.nodes[1].ports[0].functions) == 2


def test_serving_tables_are_read() -> None:
    cluster = parse_cluster(
        PAIR + '\n[engine]\nkind = "vllm"\n[model]\npath = "org/m"\n[profile]\nmax_num_seqs = 4\n'
    )
    assert cluster.engine is not None
    assert cluster.engine.kind == "vllm"
    assert cluster.profile.max_num_seqs == 4


def _message(text: str) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_cluster(text, source="c.toml")
    message = str(caught.value)
    assert "\n" not in message
    assert " — " in message  # what happened — how to fix it
    return message


def test_malformed_toml_names_the_line() -> None:
    message = _message(PAIR + "\n[fabric\nmtu = 9000\n")
    assert message.startswith("c.toml line 10, column 8:")
    assert "fix the TOML syntax there" in message


def test_config_error_is_a_usage_error() -> None:
    assert issubclass(ConfigError, UsageError)


def test_mtu_out_of_range_names_range_and_line() -> None:
    message = _message(PAIR + "\n[fabric]\nmtu = 12000\n")
    assert "c.toml line 11:" in message
    assert "mtu 12000 is out of range 1280–9978" in message
    assert "use 9000" in message


def test_mtu_too_small() -> None:
    assert "out of range" in _message(PAIR + "\n[fabric]\nmtu = 576\n")


def test_unknown_key_is_named_with_the_fix() -> None:
    message = _message(PAIR + "\n[fabric]\nmtuu = 9000\n")
    assert "unknown key 'fabric.mtuu'" in message
    assert "remove it or fix its spelling" in message


def test_bad_cable_string() -> None:
    message = _message(PAIR.replace("<->", "--"))
    assert "is not `node.port <-> node.port`" in message


def test_duplicate_node_name() -> None:
    message = _message(PAIR.replace('name = "b"', 'name = "a"'))
    assert "node a twice" in message


def test_missing_nodes() -> None:
    assert "nodes is missing — add it" in _message("cables = []\n")


def test_pool_too_small_for_two_subnets() -> None:
    message = _message(PAIR + '\n[fabric]\nsubnet_pool = "10.9.0.0/24"\n')
    assert "smaller than two /24" in message


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist — pass the path"):
        load_cluster(tmp_path / "nope.toml")


def test_head_must_be_a_node() -> None:
    assert "fabric.head z is not a node" in _message(PAIR + '\n[fabric]\nhead = "z"\n')


@pytest.mark.parametrize("key", ["ready_timeout_s", "stall_window_s"])
def test_a_wait_longer_than_a_day_is_refused(key: str) -> None:
    """31 years passed `gt=0`: `up` would have waited on a dead engine until the user gave up."""
    message = _message(PAIR + f'\n[engine]\nkind = "vllm"\n{key} = 1e9\n')
    assert f"engine.{key} is '1e9' (out of range)" in message
    assert "86400" in message
