"""`sparkrig sync CLUSTER`: the engine image and the model reach every node that needs them,
then are proven the same. The plan compares each node with the source node (the head unless
`--from`): the image by its layers and config digest, the model by its file list and sizes.
`--apply` copies only what differs — the image as `RUNTIME save | RUNTIME load` where its
layers differ, each model file that is missing or of another size, written beside its place
and renamed when whole (so an interrupted sync resumes where it stopped) — a bounded number of
nodes at a time, and then checks again, with a sha256 of every copied file on both sides.

Copies stream from the source node to the target through this machine's executors (local, ssh,
netns), one pipe per transfer: nothing is staged on this machine's disk.
"""

from __future__ import annotations

import asyncio
import shlex
import shutil
import subprocess
from collections.abc import Callable, Mapping
from typing import Literal

from pydantic import BaseModel, Field

from sparkrig.engines.launch_spec import ContainerRun
from sparkrig.errors import LaunchError
from sparkrig.launch.cluster_plan import LaunchPlan
from sparkrig.launch.containers import ImageIdentity, parse_image_identity
from sparkrig.launch.executors import Executor
from sparkrig.launch.model_identity import LISTING_SCRIPT, listing_differences, parse_listing

Say = Callable[[str], None]
ImageState = Literal["same", "missing", "differs", "not needed"]
_WRITE_FILE = (
    'mkdir -p "$(dirname "$1")" && cat > "$1.sparkrig-partial" && mv "$1.sparkrig-partial" "$1"'
)
# one digest per argument, in order (`missing` for a file that is not there)
_SHA256 = 'for f in "$@"; do sha256sum < "$f" 2>/dev/null | cut -d" " -f1 || echo missing; done'


class NodeSync(BaseModel):
    node: str
    image: ImageState = "not needed"
    image_detail: str = ""
    model_files: list[str] = Field(default_factory=list, description="files to copy, relative")
    model_bytes: int = 0
    model_needed: bool = False

    @property
    def in_step(self) -> bool:
        return self.image in {"same", "not needed"} and not self.model_files


class SyncPlan(BaseModel):
    cluster: str
    source: str
    image: str | None
    model_path: str | None
    nodes: list[NodeSync]
    verified: list[str] = Field(default_factory=list, description="what the check after proved")

    @property
    def in_step(self) -> bool:
        return all(node.in_step for node in self.nodes)


def _container(plan: LaunchPlan) -> tuple[ContainerRun | None, list[str]]:
    contained = [p for p in plan.processes if p.container is not None]
    nodes = list(dict.fromkeys(p.node for p in contained))
    return (contained[0].container if contained else None), nodes


async def _identity(executor: Executor, run: ContainerRun) -> ImageIdentity | None:
    argv = run.command("image", "inspect", run.image)
    result = await asyncio.to_thread(executor.run, argv, timeout=60)
    return parse_image_identity(result.stdout) if result.ok else None


async def _listing(executor: Executor, path: str) -> dict[str, int] | None:
    argv = ["sh", "-c", LISTING_SCRIPT, "sh", path]
    result = await asyncio.to_thread(executor.run, argv, timeout=300)
    return parse_listing(result.stdout) if result.ok else None


async def plan_sync(
    plan: LaunchPlan, executors: Mapping[str, Executor], source: str | None = None
) -> SyncPlan:
    run, image_nodes = _container(plan)
    model_path = plan.model_path if plan.model_path and plan.model_path.startswith("/") else None
    model_nodes = plan.weight_nodes if model_path else []
    origin = source or plan.head
    if origin not in executors:
        raise LaunchError(
            f"--from {origin}: no such node reachable in {plan.cluster} — name one of "
            + ", ".join(executors)
        )
    nodes = [n for n in executors if n != origin and (n in image_nodes or n in model_nodes)]
    reference_image = await _identity(executors[origin], run) if run is not None else None
    if run is not None and reference_image is None:
        raise LaunchError(
            f"the source node {origin} has no image {run.image} — pull or load it there first, "
            "or name another source with --from"
        )
    reference_files = (
        await _listing(executors[origin], model_path) if model_path and model_nodes else None
    )
    if model_path and model_nodes and reference_files is None:
        raise LaunchError(
            f"the source node {origin} has no model at {model_path} — put it there first, or "
            "name another source with --from"
        )
    out = []
    for node in nodes:
        entry = NodeSync(node=node)
        if run is not None and reference_image is not None and node in image_nodes:
            theirs = await _identity(executors[node], run)
            if theirs is None:
                entry.image = "missing"
            elif diff := reference_image.differences(theirs):
                entry.image, entry.image_detail = "differs", "; ".join(diff)
            else:
                entry.image = "same"
        if reference_files is not None and node in model_nodes:
            entry.model_needed = True
            theirs_files = await _listing(executors[node], model_path or "") or {}
            entry.model_files = sorted(
                p for p, size in reference_files.items() if theirs_files.get(p) != size
            )
            entry.model_bytes = sum(reference_files[p] for p in entry.model_files)
            if not entry.model_files and listing_differences(reference_files, theirs_files):
                entry.image_detail += " (the model folder has extra files; left in place)"
        out.append(entry)
    return SyncPlan(
        cluster=plan.cluster,
        source=origin,
        image=run.image if run else None,
        model_path=model_path,
        nodes=out,
    )


def _pipe(
    source_argv: list[str], target_argv: list[str], timeout: float
) -> subprocess.CompletedProcess[str]:
    """SOURCE | TARGET on this machine; bash's pipefail so a failed save is not a good load
    (POSIX sh has no pipefail: without bash the target's status alone decides)."""
    line = f"{shlex.join(source_argv)} | {shlex.join(target_argv)}"
    shell = ["bash", "-o", "pipefail", "-c"] if shutil.which("bash") else ["sh", "-c"]
    return subprocess.run(
        [*shell, line],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _copy_node(
    sync: SyncPlan,
    entry: NodeSync,
    run: ContainerRun | None,
    executors: Mapping[str, Executor],
    say: Say,
) -> None:
    source, target = executors[sync.source], executors[entry.node]
    if run is not None and entry.image in {"missing", "differs"}:
        say(f"{entry.node}: copying image {run.image} from {sync.source}")
        done = _pipe(
            source.argv_for(run.command("save", run.image)),
            target.argv_for(run.command("load")),
            timeout=7200,
        )
        if done.returncode != 0:
            raise LaunchError(
                f"node {entry.node}: copying image {run.image} failed "
                f"({done.stderr.strip()[-200:]}) — run `sparkrig sync --apply` again, or load "
                "it there by hand"
            )
    for index, name in enumerate(entry.model_files, 1):
        path = f"{sync.model_path}/{name}" if name != "." else str(sync.model_path)
        say(f"{entry.node}: model file {index}/{len(entry.model_files)} {name}")
        done = _pipe(
            source.argv_for(["cat", path]),
            target.argv_for(["sh", "-c", _WRITE_FILE, "sh", path]),
            timeout=7200,
        )
        if done.returncode != 0:
            raise LaunchError(
                f"node {entry.node}: copying {path} failed ({done.stderr.strip()[-200:]}) — run "
                "`sparkrig sync --apply` again: finished files are kept, this one starts over"
            )


async def _digests(executor: Executor, paths: list[str]) -> dict[str, str]:
    if not paths:
        return {}
    argv = ["sh", "-c", _SHA256, "sh", *paths]
    result = await asyncio.to_thread(executor.run, argv, timeout=7200)
    digests = result.stdout.split()
    if len(digests) != len(paths):
        return {}  # an answer cut short proves nothing
    return dict(zip(paths, digests, strict=True))


async def apply_sync(
    sync: SyncPlan,
    plan: LaunchPlan,
    executors: Mapping[str, Executor],
    *,
    fan_out: int,
    say: Say,
) -> SyncPlan:
    """Copy what differs, `fan_out` nodes at a time; then plan again and prove the copies."""
    run, _ = _container(plan)
    gate = asyncio.Semaphore(fan_out)

    async def one(entry: NodeSync) -> None:
        async with gate:
            await asyncio.to_thread(_copy_node, sync, entry, run, executors, say)

    await asyncio.gather(*(one(entry) for entry in sync.nodes if not entry.in_step))
    after = await plan_sync(plan, executors, sync.source)
    if not after.in_step:
        left = ", ".join(n.node for n in after.nodes if not n.in_step)
        raise LaunchError(
            f"after copying, {left} still differ(s) from {sync.source} — run sync again"
        )
    copied = {entry.node: entry.model_files for entry in sync.nodes if entry.model_files}
    verified = [f"image {sync.image}: same layers and config on every node"] if sync.image else []
    for node, names in copied.items():
        paths = [f"{sync.model_path}/{n}" if n != "." else str(sync.model_path) for n in names]
        ours, theirs = await asyncio.gather(
            _digests(executors[sync.source], paths), _digests(executors[node], paths)
        )
        wrong = [p for p in paths if ours.get(p) is None or ours.get(p) != theirs.get(p)]
        if wrong:
            raise LaunchError(
                f"node {node}: {len(wrong)} copied file(s) differ from {sync.source} by sha256 "
                f"({', '.join(wrong[:3])}) — run `sparkrig sync --apply` again"
            )
        verified.append(f"{node}: {len(paths)} copied model file(s), sha256 equal to {sync.source}")
    if sync.model_path:
        verified.append(f"model {sync.model_path}: same files and sizes on every node")
    return after.model_copy(update={"verified": verified})
