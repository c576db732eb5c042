"""`resolve_executors`: which executor reaches which node, for every kind and every way the
cluster file and the command line can disagree. Pure: no node is reached."""

from __future__ import annotations

import sys

import pytest

from sparkrig.config import parse_cluster
from sparkrig.config.cluster import Cluster
from sparkrig.errors import ConfigError, SparkrigError, UsageError
from sparkrig.fabric.runner import ExecutorSpec
from sparkrig.launch.executors import LocalExecutor, NetnsExecutor, SshExecutor, reach_nodes
from sparkrig.launch.node_executors import (
    ExecutorChoice,
    every_node_here,
    node_python,
    resolve_executors,
)

PAIR = """
name = "pair"
cables = ["a.p0 <-> b.p0"]
{executor}
[[nodes]]
name = "a"
management = "192.168.1.11/24"
{a_extra}
[[nodes]]
name = "b"
{b_extra}
"""


def cluster(
    executor: str = "", a_extra: str = "", b_extra: str = 'ssh = "admin@spark-b"'
) -> Cluster:
    return parse_cluster(PAIR.format(executor=executor, a_extra=a_extra, b_extra=b_extra))


def test_local_reaches_only_the_named_node() -> None:
    specs = resolve_executors(cluster(), ExecutorChoice("local", node="b"))
    assert specs == {"b": ExecutorSpec(kind="local")}


def test_local_on_a_cluster_needs_the_node_named() -> None:
    with pytest.raises(UsageError, match="name it with --node"):
        resolve_executors(cluster(), ExecutorChoice("local"))
    with pytest.raises(UsageError, match="--node z is not a node"):
        resolve_executors(cluster(), ExecutorChoice("local", node="z"))


def test_netns_pairs_and_prefix() -> None:
    specs = resolve_executors(cluster(), ExecutorChoice("netns", ("a=ns-x",), "sr-"))
    assert specs == {
        "a": ExecutorSpec(kind="netns", target="ns-x"),
        "b": ExecutorSpec(kind="netns", target="sr-b"),
    }


@pytest.mark.parametrize(
    ("pairs", "prefix", "message"),
    [
        (("a=ns-a",), None, "node b has no namespace"),
        (("z=ns-z",), "p-", "is not NODE=NAMESPACE for a known node"),
        (("a",), "p-", "is not NODE=NAMESPACE"),
        (("a=",), "p-", "is not NODE=NAMESPACE"),
    ],
)
def test_netns_refuses_what_it_cannot_map(
    pairs: tuple[str, ...], prefix: str | None, message: str
) -> None:
    with pytest.raises(UsageError, match=message):
        resolve_executors(cluster(), ExecutorChoice("netns", pairs, prefix))


def test_ssh_goes_to_the_ssh_field_else_the_management_address() -> None:
    specs = resolve_executors(cluster(), ExecutorChoice("ssh"))
    assert specs == {
        "a": ExecutorSpec(kind="ssh", target="192.168.1.11"),
        "b": ExecutorSpec(kind="ssh", target="admin@spark-b"),
    }


def test_ssh_without_a_destination_names_the_node() -> None:
    with pytest.raises(UsageError, match="node b has no ssh destination"):
        resolve_executors(cluster(b_extra=""), ExecutorChoice("ssh"))


def test_an_unknown_kind_is_refused() -> None:
    with pytest.raises(UsageError, match="--executor rsh is not known — use local, netns or ssh"):
        resolve_executors(cluster(), ExecutorChoice("rsh"))


def test_without_a_kind_the_file_decides() -> None:
    file_ssh = '[executor]\nkind = "ssh"\nconnect_timeout_s = 3\nssh_config = "cfg"\n'
    specs = resolve_executors(cluster(executor=file_ssh), ExecutorChoice())
    assert specs["a"] == ExecutorSpec(
        kind="ssh", target="192.168.1.11", connect_timeout_s=3, ssh_config="cfg"
    )
    assert specs["b"].target == "admin@spark-b"


def test_a_node_of_its_own_beats_the_file() -> None:
    own = 'executor = { kind = "netns", target = "ns-a" }'
    specs = resolve_executors(
        cluster(executor='[executor]\nkind = "local"\n', a_extra=own), ExecutorChoice()
    )
    assert specs == {
        "a": ExecutorSpec(kind="netns", target="ns-a"),
        "b": ExecutorSpec(kind="local"),
    }


def test_a_file_executor_that_cannot_reach_a_node_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="node a has no executor"):
        resolve_executors(cluster(b_extra='executor = { kind = "local" }'), ExecutorChoice())
    with pytest.raises(ConfigError, match="the netns executor needs a namespace"):
        resolve_executors(cluster(executor='[executor]\nkind = "netns"\n'), ExecutorChoice())
    with pytest.raises(ConfigError, match="the ssh executor has no destination"):
        resolve_executors(
            cluster(executor='[executor]\nkind = "ssh"\n', b_extra=""), ExecutorChoice()
        )


def test_a_file_without_executors_is_one_local_node() -> None:
    with pytest.raises(UsageError, match=r"the cluster file has no \[executor\]"):
        resolve_executors(cluster(), ExecutorChoice())
    assert resolve_executors(cluster(), ExecutorChoice(node="a")) == {
        "a": ExecutorSpec(kind="local")
    }


def test_a_prefix_alone_means_netns() -> None:
    specs = resolve_executors(cluster(), ExecutorChoice(netns_prefix="ns-"))
    assert [s.target for s in specs.values()] == ["ns-a", "ns-b"]


def test_the_options_beat_the_file() -> None:
    specs = resolve_executors(
        cluster(executor='[executor]\nkind = "local"\n'), ExecutorChoice("ssh")
    )
    assert {s.kind for s in specs.values()} == {"ssh"}


def test_reach_nodes_builds_each_kind() -> None:
    own = 'executor = { kind = "netns", target = "ns-a" }'
    runners = reach_nodes(cluster(executor='[executor]\nkind = "ssh"\n', a_extra=own))
    assert isinstance(runners["a"], NetnsExecutor)
    assert isinstance(runners["b"], SshExecutor)
    assert isinstance(reach_nodes(cluster(), ExecutorChoice(node="b"))["b"], LocalExecutor)


def test_every_refusal_is_a_sparkrig_error_with_a_fix() -> None:
    for choice in (ExecutorChoice("local"), ExecutorChoice("netns"), ExecutorChoice("x")):
        with pytest.raises(SparkrigError, match=" — "):
            resolve_executors(cluster(), choice)


def test_loopback_makes_local_stand_for_every_node() -> None:
    """The fabric test's `--executor local`: every rank a process on this machine."""
    specs = resolve_executors(cluster(), ExecutorChoice("local", loopback=True))
    assert specs == {"a": ExecutorSpec(kind="local"), "b": ExecutorSpec(kind="local")}
    assert list(reach_nodes(cluster(), ExecutorChoice("local", loopback=True))) == ["a", "b"]


def test_loopback_leaves_the_other_kinds_as_they_are() -> None:
    choice = ExecutorChoice("netns", netns_prefix="ns-", loopback=True)
    assert [s.target for s in resolve_executors(cluster(), choice).values()] == ["ns-a", "ns-b"]
    with pytest.raises(UsageError, match="node b has no ssh destination"):
        resolve_executors(cluster(b_extra=""), ExecutorChoice("ssh", loopback=True))


def test_without_a_cluster_file_this_machine_is_the_one_node() -> None:
    """doctor with no cluster file: this machine alone, by --node, else by its host name."""
    here = ExecutorChoice(this_machine="spark-host")
    assert resolve_executors(None, here) == {"spark-host": ExecutorSpec(kind="local")}
    named = ExecutorChoice(node="spark1", this_machine="spark-host")
    assert resolve_executors(None, named) == {"spark1": ExecutorSpec(kind="local")}
    assert resolve_executors(None, ExecutorChoice()) == {"local": ExecutorSpec(kind="local")}
    runners = reach_nodes(None, ExecutorChoice(kind="ssh", this_machine="h"))
    assert list(runners) == ["h"]
    assert isinstance(runners["h"], LocalExecutor)


def test_a_command_names_its_own_way_out_of_a_file_without_executors() -> None:
    """fabric test and discover have no --node: each says what it can do instead."""
    choice = ExecutorChoice(no_executor_fix="rehearse with --executor local")
    with pytest.raises(
        UsageError, match=r"^the cluster file has no \[executor\] — rehearse with --executor local$"
    ):
        resolve_executors(cluster(), choice)


def test_every_node_here_only_when_each_is_reached_locally() -> None:
    """The fabric test's rehearsal: every rank a local process, from the option or the file."""
    assert every_node_here(resolve_executors(cluster(), ExecutorChoice("local", loopback=True)))
    assert every_node_here(
        resolve_executors(cluster(executor='[executor]\nkind = "local"\n'), ExecutorChoice())
    )
    mixed = cluster(executor='[executor]\nkind = "ssh"\n', a_extra='executor = { kind = "local" }')
    assert not every_node_here(resolve_executors(mixed, ExecutorChoice()))
    assert not every_node_here(resolve_executors(cluster(), ExecutorChoice("netns", (), "ns-")))
    assert not every_node_here({})


def test_each_node_runs_the_python_its_executor_has() -> None:
    """This interpreter where the node is this machine (or a namespace of it), else python3."""
    mixed = cluster(
        executor='[executor]\nkind = "ssh"\n',
        a_extra='executor = { kind = "netns", target = "ns-a" }',
    )
    specs = resolve_executors(mixed, ExecutorChoice())
    assert {name: node_python(spec) for name, spec in specs.items()} == {
        "a": sys.executable,
        "b": "python3",
    }
    assert node_python(ExecutorSpec(kind="local")) == sys.executable


def test_the_files_python_is_the_one_that_runs_on_its_nodes() -> None:
    """sparkrig in a venv or pipx on the nodes: `python3` on an ssh session's PATH lacks it (the
    twin's nodes: a pyenv shim first on root's PATH, no sparkrig)."""
    venv = cluster(executor='[executor]\nkind = "ssh"\npython = "/opt/sparkrig/bin/python"\n')
    specs = resolve_executors(venv, ExecutorChoice())
    assert {node_python(spec) for spec in specs.values()} == {"/opt/sparkrig/bin/python"}


def test_executor_ssh_on_the_command_line_keeps_the_files_ssh_settings() -> None:
    """`--executor ssh` on a file that already says ssh: its ssh_config, timeout and python stay
    (without them the twin's nodes failed host key verification)."""
    settings = '[executor]\nkind = "ssh"\nssh_config = "/tmp/twin/ssh_config"\npython = "/v/py"\n'
    specs = resolve_executors(cluster(executor=settings), ExecutorChoice(kind="ssh"))
    assert specs["b"].ssh_config == "/tmp/twin/ssh_config"
    assert specs["b"].target == "admin@spark-b"
    assert node_python(specs["b"]) == "/v/py"
    plain = resolve_executors(cluster(), ExecutorChoice(kind="ssh", node=None))
    assert plain["a"] == ExecutorSpec(kind="ssh", target="192.168.1.11")
