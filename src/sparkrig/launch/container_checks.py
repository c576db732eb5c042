"""What `up` asks every node's container runtime before anything starts, and after: the
runtime answers, the image is there with the same layers and config on every node, every
hashed bind source has the same content everywhere, and no container of another owner holds a
name sparkrig would use. `down` removes only containers carrying sparkrig's labels.
"""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Callable

from sparkrig.engines.launch_spec import ContainerRun, ProcessSpec
from sparkrig.errors import LaunchError
from sparkrig.fabric.runner import CommandResult, CommandRunner
from sparkrig.launch.containers import (
    RDMA_DEVICES,
    ContainerState,
    ImageIdentity,
    parse_container_state,
    parse_image_identity,
    runtime_refusal,
)

Say = Callable[[str], None]

# a file: its sha256; a folder: the sha256 of its files' sorted sha256 lines; else `missing`
_DIGEST_SCRIPT = (
    'for p in "$@"; do if [ -f "$p" ]; then d=$(sha256sum < "$p" | cut -d" " -f1); '
    'elif [ -d "$p" ]; then d=$(cd "$p" && find . -type f -print0 | LC_ALL=C sort -z | '
    'xargs -0 -r sha256sum | sha256sum | cut -d" " -f1); else d=missing; fi; '
    'printf "%s %s\\n" "$d" "$p"; done'
)


async def _run(runner: CommandRunner, argv: list[str]) -> CommandResult:
    return await asyncio.to_thread(runner.run, argv, timeout=60)


def _runs_by_node(processes: list[ProcessSpec]) -> dict[str, list[ContainerRun]]:
    by_node: dict[str, list[ContainerRun]] = {}
    for process in processes:
        if process.container is not None:
            by_node.setdefault(process.node, []).append(process.container)
    return by_node


def runtime_failure(node: str, run: ContainerRun, result: CommandResult) -> str:
    """One line naming the node, the cause and the fix for a runtime that does not answer."""
    said = result.error_line
    cause, fix = runtime_refusal(run.runtime, said, result.returncode)
    return f"node {node}: {run.runtime} {cause} ({said}) — {fix}"


async def check_containers(
    processes: list[ProcessSpec], runners: dict[str, CommandRunner], cluster: str, say: Say
) -> None:
    """Refuse, before anything starts, a node whose runtime, image or bind sources differ;
    remove sparkrig's own containers left by an earlier start; refuse a foreign one."""
    by_node = _runs_by_node(processes)
    if not by_node:
        return
    first = next(iter(by_node.values()))[0]
    await asyncio.gather(*(_runtime_answers(n, runs[0], runners[n]) for n, runs in by_node.items()))
    identities = await asyncio.gather(
        *(_image_identity(n, runs[0], runners[n]) for n, runs in by_node.items())
    )
    _same_image(first.image, dict(zip(by_node, identities, strict=True)))
    digests = await asyncio.gather(
        *(_path_digests(runners[n], _verified(runs)) for n, runs in by_node.items())
    )
    _same_files(dict(zip(by_node, digests, strict=True)))
    for node in {p.node for p in processes if RDMA_DEVICES in p.argv}:
        await _rdma_devices(node, runners[node])
    for node, runs in by_node.items():
        await _make_folders(node, runners[node], runs)
        for run in runs:
            await _clear_name(node, run, runners[node], cluster, say)


async def _runtime_answers(node: str, run: ContainerRun, runner: CommandRunner) -> None:
    result = await _run(runner, run.command("info"))
    if not result.ok:
        raise LaunchError(runtime_failure(node, run, result))


async def _image_identity(node: str, run: ContainerRun, runner: CommandRunner) -> ImageIdentity:
    result = await _run(runner, run.command("image", "inspect", run.image))
    identity = parse_image_identity(result.stdout) if result.ok else None
    if identity is None:
        said = result.error_line if not result.ok else "no image in its answer"
        raise LaunchError(
            f"node {node}: image {run.image} is not there ({run.runtime} image inspect: {said}) "
            f"— pull it on that node, or copy it (`{run.runtime} save {run.image} | ssh {node} "
            f"{run.runtime} load`); every node must hold the same image"
        )
    return identity


def _same_image(image: str, identities: dict[str, ImageIdentity]) -> None:
    nodes = list(identities)
    reference = identities[nodes[0]]
    differing = {
        node: diff
        for node, identity in identities.items()
        if (diff := reference.differences(identity))
    }
    if differing:
        lines = "; ".join(f"node {node}: {', '.join(diff)}" for node, diff in differing.items())
        raise LaunchError(
            f"image {image} is not the same build on every node (compared with node "
            f"{nodes[0]}: {lines}) — load one build everywhere (pin it as name@sha256:…); the "
            "image ID is not compared, it differs by snapshotter"
        )


def _verified(runs: list[ContainerRun]) -> list[str]:
    return list(dict.fromkeys(path for run in runs for path in run.verified_paths))


async def _path_digests(runner: CommandRunner, paths: list[str]) -> dict[str, str]:
    if not paths:
        return {}
    result = await _run(runner, ["sh", "-c", _DIGEST_SCRIPT, "sh", *paths])
    digests = {}
    for line in result.stdout.splitlines():
        digest, _, path = line.partition(" ")
        if path in paths:
            digests[path] = digest
    return {path: digests.get(path, "missing") for path in paths}


def _same_files(digests: dict[str, dict[str, str]]) -> None:
    problems = []
    nodes = sorted(digests)
    for path in dict.fromkeys(p for node in nodes for p in digests[node]):
        seen = {node: digests[node].get(path, "missing") for node in nodes}
        missing = [node for node, digest in seen.items() if digest == "missing"]
        if missing:
            problems.append(f"{path} is missing on {', '.join(missing)}")
        elif len(set(seen.values())) > 1:
            shown = ", ".join(f"{node} {digest[:12]}" for node, digest in seen.items())
            problems.append(f"{path} differs ({shown})")
    if problems:
        raise LaunchError(
            "bind-mounted files differ between nodes: "
            + "; ".join(problems)
            + " — copy the same file to every node; a rank without the patch runs unpatched, "
            "silently (docs/field-notes.md#patch-on-every-node)"
        )


async def _rdma_devices(node: str, runner: CommandRunner) -> None:
    found = await _run(runner, ["test", "-d", RDMA_DEVICES])
    if not found.ok:
        raise LaunchError(
            f"node {node}: {RDMA_DEVICES} does not exist, but the fabric plan runs NCCL over "
            "RDMA — load the RDMA drivers there (`sparkrig doctor` names them), or set "
            "engine.container.rdma_devices = false to run NCCL over sockets"
        )


async def _make_folders(node: str, runner: CommandRunner, runs: list[ContainerRun]) -> None:
    folders = list(dict.fromkeys(path for run in runs for path in run.created_paths))
    if not folders:
        return
    result = await _run(runner, ["mkdir", "-p", *folders])
    if not result.ok:
        raise LaunchError(
            f"node {node}: cannot make {', '.join(folders)} ({result.error_line}) — make them "
            "there, writable by the container's user"
        )


async def inspect_container(run: ContainerRun, runner: CommandRunner) -> ContainerState | None:
    result = await _run(runner, run.command("container", "inspect", run.name))
    return parse_container_state(result.stdout) if result.ok else None


async def _clear_name(
    node: str, run: ContainerRun, runner: CommandRunner, cluster: str, say: Say
) -> None:
    state = await inspect_container(run, runner)
    if state is None:
        return
    if not state.ours(cluster):
        owner = state.labels.get("sparkrig.cluster")
        whose = f"sparkrig cluster {owner}" if owner else "not started by sparkrig"
        raise LaunchError(
            f"node {node}: a container named {run.name} already exists ({whose}, "
            f"{state.describe()}) — sparkrig never touches it; remove or rename it yourself, "
            "or rename this cluster"
        )
    removed = await _run(runner, run.command("rm", "--force", run.name))
    if not removed.ok:
        by_hand = shlex.join(run.command("rm", "-f", run.name))
        raise LaunchError(
            f"node {node}: cannot remove the earlier container {run.name} "
            f"({removed.error_line}) — remove it with `{by_hand}`"
        )
    say(f"{node}: removed container {run.name} left by an earlier start ({state.describe()})")


async def remove_container(run: ContainerRun, runner: CommandRunner, cluster: str) -> str:
    """After its process stopped: remove the container if it carries this cluster's labels."""
    state = await inspect_container(run, runner)
    if state is None:
        return "container gone"
    if not state.ours(cluster):
        return f"container {run.name} is not this cluster's; left alone"
    removed = await _run(runner, run.command("rm", "--force", run.name))
    if not removed.ok:
        return f"container {run.name} not removed: {removed.error_line}"
    return f"container removed ({state.describe()})"


def container_logs(run: ContainerRun, lines: int) -> list[str]:
    return run.command("logs", "--tail", str(lines), run.name)
