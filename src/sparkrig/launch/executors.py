"""Run a command on a node: on this machine, inside a network namespace, or over ssh.

One interface (`sparkrig.fabric.runner.CommandRunner`) for the fabric now and the engine
launcher later. Commands are argv lists, never shell strings, except where ssh must join them.
"""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Mapping, Sequence

from sparkrig import defaults
from sparkrig.config.cluster import Cluster
from sparkrig.errors import ExecutorError
from sparkrig.fabric.runner import CommandResult, ExecutorSpec
from sparkrig.launch.node_executors import ExecutorChoice, resolve_executors
from sparkrig.launch.ssh_mux import mux_options


def _run(argv: list[str], shown: Sequence[str], timeout: float | None) -> CommandResult:
    limit = timeout or defaults.FABRIC_COMMAND_TIMEOUT_S
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=limit, check=False)
    except FileNotFoundError as exc:
        raise ExecutorError(
            f"cannot run {argv[0]}: not installed — install it (iproute2 for ip, openssh-client "
            "for ssh)"
        ) from exc
    except subprocess.TimeoutExpired as exc:
        raise ExecutorError(
            f"`{shlex.join(argv)}` ran past {limit:.0f} s — check that the node answers"
        ) from exc
    return CommandResult(
        argv=list(shown), returncode=done.returncode, stdout=done.stdout, stderr=done.stderr
    )


class LocalExecutor:
    description = "local"

    def argv_for(self, argv: Sequence[str]) -> list[str]:
        """The command line that runs argv on the node from here (for long-lived processes)."""
        return list(argv)

    def run(self, argv: Sequence[str], *, timeout: float | None = None) -> CommandResult:
        return _run(list(argv), argv, timeout)


class NetnsExecutor:
    """`ip netns exec NAME argv`: the namespace stands for a node (tests, rehearsals)."""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace

    @property
    def description(self) -> str:
        return f"netns {self.namespace}"

    def argv_for(self, argv: Sequence[str]) -> list[str]:
        return ["ip", "netns", "exec", self.namespace, *argv]

    def run(self, argv: Sequence[str], *, timeout: float | None = None) -> CommandResult:
        result = _run(self.argv_for(argv), argv, timeout)
        if result.returncode != 0 and "Cannot open network namespace" in result.stderr:
            raise ExecutorError(
                f"network namespace {self.namespace} does not exist — create it or map the "
                "node to another with --netns NODE=NAME"
            )
        return result


class SshExecutor:
    """The `ssh` binary in batch mode (keys, no password prompts); argv is quoted for the
    remote shell."""

    def __init__(
        self,
        destination: str,
        connect_timeout_s: float | None = None,
        config_file: str | None = None,
    ) -> None:
        self.destination = destination
        self.connect_timeout_s = connect_timeout_s or defaults.SSH_CONNECT_TIMEOUT_S
        self.config_file = config_file

    @property
    def description(self) -> str:
        return f"ssh {self.destination}"

    def argv_for(self, argv: Sequence[str], *, shared: bool = False) -> list[str]:
        """`shared`: ride on the node's one shared connection (short commands only; a
        long-lived process keeps a connection of its own, which ends with it)."""
        # a bounded connect: an unreachable node fails in seconds instead of hanging `up`
        config = ["-F", self.config_file] if self.config_file else []
        mux = mux_options(self.config_file, self.destination) if shared else []
        return [
            "ssh",
            *config,
            *mux,
            "-o",
            "BatchMode=yes",
            "-o",
            f"ConnectTimeout={self.connect_timeout_s:g}",
            self.destination,
            "--",
            shlex.join(argv),
        ]

    def run(self, argv: Sequence[str], *, timeout: float | None = None) -> CommandResult:
        result = _run(self.argv_for(argv, shared=True), argv, timeout)
        if result.returncode == 255:
            raise ExecutorError(
                f"ssh to {self.destination} failed: {result.error_line} — "
                f"{self._fix_for(result.stderr)}"
            )
        return result

    def _fix_for(self, stderr: str) -> str:
        """The fix for why ssh could not run the command, by what ssh said."""
        config = f" -F {self.config_file}" if self.config_file else ""
        if "Permission denied" in stderr:
            return (
                "the node refused key authentication, and sparkrig runs ssh in batch mode (no "
                f"password prompt): install your key there (`ssh-copy-id{config} "
                f"{self.destination}`) or name it as IdentityFile in the executor's ssh_config"
            )
        if "Host key verification failed" in stderr:
            return (
                "this machine does not know the node's host key: connect once by hand "
                f"(`ssh{config} {self.destination} true`) and accept it"
            )
        return "check the host, its key and the node's `ssh` field"


Executor = LocalExecutor | NetnsExecutor | SshExecutor


def executor_for(spec: ExecutorSpec) -> Executor:
    if spec.kind == "local":
        return LocalExecutor()
    if not spec.target:
        raise ExecutorError(f"the {spec.kind} executor needs a target — name it")
    if spec.kind == "netns":
        return NetnsExecutor(spec.target)
    return SshExecutor(spec.target, spec.connect_timeout_s, spec.ssh_config)


def executors_for(specs: Mapping[str, ExecutorSpec]) -> dict[str, Executor]:
    """One executor per node, from what `resolve_executors` decided."""
    return {node: executor_for(spec) for node, spec in specs.items()}


def reach_nodes(
    cluster: Cluster | None, choice: ExecutorChoice | None = None
) -> dict[str, Executor]:
    """Every node of a cluster, reached as the options (else the file's `[executor]`) say;
    without a cluster, this machine alone."""
    return executors_for(resolve_executors(cluster, choice or ExecutorChoice()))
