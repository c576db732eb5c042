"""The executors behind `fabric apply` (and the launcher later): argv in, result out."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from sparkrig import defaults
from sparkrig.errors import ExecutorError
from sparkrig.fabric.runner import ExecutorSpec
from sparkrig.launch import ssh_mux
from sparkrig.launch.executors import LocalExecutor, NetnsExecutor, SshExecutor, executor_for


def test_local_runs_argv_without_a_shell() -> None:
    result = LocalExecutor().run(["printf", "%s|", "a b", "$HOME"])
    assert result.ok
    assert result.stdout == "a b|$HOME|"


def test_non_zero_exit_is_a_result_not_an_exception() -> None:
    result = LocalExecutor().run(["sh", "-c", "echo oops >&2; exit 3"])
    assert result.returncode == 3
    assert result.error_line == "oops"


def test_missing_binary_names_the_fix() -> None:
    with pytest.raises(ExecutorError, match="not installed — install it"):
        LocalExecutor().run(["sparkrig-no-such-binary"])


def test_ssh_quotes_argv_for_the_remote_shell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "ssh"
    fake.write_text('#!/bin/sh\nfor a in "$@"; do printf "[%s]" "$a"; done\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv(defaults.SSH_MUX_OFF_ENV, "1")
    result = SshExecutor("admin@spark-a").run(
        ["ip", "address", "add", "10.20.0.1/24", "dev", "x y"]
    )
    assert (
        result.stdout == "[-o][BatchMode=yes][-o][ConnectTimeout=5][admin@spark-a][--]"
        "[ip address add 10.20.0.1/24 dev 'x y']"
    )
    assert result.argv == ["ip", "address", "add", "10.20.0.1/24", "dev", "x y"]


def test_ssh_connection_failure_names_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "ssh"
    fake.write_text(
        "#!/bin/sh\necho 'ssh: connect to host spark-a port 22: No route to host' >&2\nexit 255\n"
    )
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(ExecutorError, match="No route to host — check the host"):
        SshExecutor("spark-a").run(["true"])


@pytest.mark.skipif(os.geteuid() != 0, reason="ip netns exec needs root")
def test_missing_namespace_names_the_fix() -> None:
    with pytest.raises(ExecutorError, match="does not exist — create it or map the node"):
        NetnsExecutor(f"srt-missing-{os.getpid()}").run(["true"])


def test_specs_build_their_executor() -> None:
    assert isinstance(executor_for(ExecutorSpec(kind="local")), LocalExecutor)
    assert executor_for(ExecutorSpec(kind="netns", target="n")).description == "netns n"
    assert executor_for(ExecutorSpec(kind="ssh", target="h")).description == "ssh h"
    with pytest.raises(ExecutorError, match="needs a target"):
        executor_for(ExecutorSpec(kind="ssh"))


def test_short_commands_share_one_connection_and_it_is_closed_at_exit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """run() rides on one master connection a node in a 0700 folder of this process;
    close_masters() asks each master to exit and removes the folder. A long-lived process
    (argv_for) keeps a connection of its own."""
    log = tmp_path / "calls"
    fake = tmp_path / "ssh"
    fake.write_text(
        f'#!/bin/sh\nfor a in "$@"; do printf "[%s]" "$a"; done >> {log}\necho >> {log}\n'
    )
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv(defaults.SSH_MUX_OFF_ENV, raising=False)
    monkeypatch.setattr(ssh_mux, "_folder", None)
    monkeypatch.setattr(ssh_mux, "_masters", set())
    node = SshExecutor("spark-a", config_file="/etc/cluster_ssh")
    node.run(["true"])
    node.run(["true"])
    folder = ssh_mux._folder
    assert folder is not None
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    first, second = log.read_text().splitlines()
    assert first == second
    assert f"[ControlMaster=auto][-o][ControlPath={folder}/%C]" in first
    assert "ControlPath" not in "".join(node.argv_for(["sleep", "60"]))
    (folder / "socket").touch()  # a master's control socket
    ssh_mux.close_masters()
    assert log.read_text().splitlines()[-1] == (
        f"[-F][/etc/cluster_ssh][-o][ControlPath={folder}/%C][-O][exit][spark-a]"
    )
    assert not folder.exists()
