"""JIT cache parity before a boot: a rank whose kernel cache is behind the others compiles while
its peers wait in a collective, and the boot fails or crawls (field notes: uneven-jit-caches,
jit-inside-profiling). Each node's cache folders (the JIT cache variables of its processes'
environment) are summarised on the node in one round trip: bytes, file count, and a digest of
the sorted file list. A node is behind in a cache when it has fewer files than another, or the
same count under another file list than most nodes hold (another kernel set), or far fewer bytes
for the same file list (kernels written part way).
"""

from __future__ import annotations

import asyncio
import shlex

from pydantic import BaseModel, ConfigDict

from sparkrig import defaults
from sparkrig.engines.launch_spec import ProcessSpec
from sparkrig.engines.vllm.launch import JIT_CACHES
from sparkrig.errors import ExecutorError
from sparkrig.fabric.runner import CommandRunner
from sparkrig.outside_numbers import int_or_none

_CACHE_VARS = tuple(name for name, _ in JIT_CACHES)


class CacheSummary(BaseModel):
    model_config = ConfigDict(frozen=True)

    path: str
    files: int
    bytes: int
    digest: str  # of the sorted relative file names; equal caches have equal digests


def cache_dirs(processes: list[ProcessSpec]) -> dict[str, str]:
    """JIT cache variable -> folder, from a node's processes' environment (first one wins)."""
    found: dict[str, str] = {}
    for process in processes:
        for var in process.env:
            if var.name in _CACHE_VARS:
                found.setdefault(var.name, var.value)
    return found


def survey_script(dirs: dict[str, str]) -> list[str]:
    """One `sh -c` that prints `cache VAR FILES BYTES DIGEST PATH` per folder (0 files and an
    empty digest for a folder that does not exist yet)."""
    lines = []
    for name, path in dirs.items():
        folder = shlex.quote(path)
        lines.append(
            f"if [ -d {folder} ]; then "
            f"n=$(find {folder} -type f | wc -l); "
            f"b=$(find {folder} -type f -printf '%s\\n' | awk '{{t+=$1}} END {{print t+0}}'); "
            f"d=$(find {folder} -type f -printf '%P\\n' | LC_ALL=C sort | sha256sum | cut -c1-16); "
            "else n=0; b=0; d=-; fi; "
            f'echo "cache {name} $n $b $d {path}"'
        )
    return ["sh", "-c", "\n".join(lines)]


def parse_survey(stdout: str) -> dict[str, CacheSummary]:
    found = {}
    for line in stdout.splitlines():
        parts = line.split(" ", 5)
        if len(parts) != 6 or parts[0] != "cache":
            continue
        files, size = int_or_none(parts[2], minimum=0), int_or_none(parts[3], minimum=0)
        if files is None or size is None:
            continue
        found[parts[1]] = CacheSummary(path=parts[5], files=files, bytes=size, digest=parts[4])
    return found


def _reference(summaries: dict[str, CacheSummary]) -> tuple[str, CacheSummary]:
    """The node whose cache the others are judged against: its file list is held by the most
    nodes, then it has the most files, then the most bytes, then the first name."""
    holders: dict[str, int] = {}
    for summary in summaries.values():
        holders[summary.digest] = holders.get(summary.digest, 0) + 1
    return min(
        summaries.items(),
        key=lambda pair: (-holders[pair[1].digest], -pair[1].files, -pair[1].bytes, pair[0]),
    )


def _behind(node: str, name: str, summaries: dict[str, CacheSummary]) -> str | None:
    """How `node`'s cache `name` lags its peers: fewer files than the fullest, another file list
    than the reference at the same count (another kernel set), or under
    LAUNCH_CACHE_PARITY_MIN_BYTES_SHARE of a peer's bytes for the same file list (kernels
    written part way); None when it does not."""
    mine = summaries[node]
    others = {n: c for n, c in summaries.items() if n != node}
    fullest_node, fullest = max(others.items(), key=lambda pair: pair[1].files)
    if mine.files < fullest.files:
        return f"{name} {mine.files} files against {fullest.files} on {fullest_node}"
    reference_node, reference = _reference(summaries)
    if mine.files == reference.files > 0 and mine.digest != reference.digest:
        return (
            f"{name} holds other files than {reference_node} (the same {mine.files} files "
            f"by count, file lists {mine.digest} and {reference.digest})"
        )
    same = {n: c for n, c in others.items() if c.digest == mine.digest}
    if not same:
        return None
    largest_node, largest = max(same.items(), key=lambda pair: pair[1].bytes)
    if mine.bytes < defaults.LAUNCH_CACHE_PARITY_MIN_BYTES_SHARE * largest.bytes:
        return (
            f"{name} {mine.bytes:,} bytes against {largest.bytes:,} on {largest_node} for the "
            f"same {mine.files} files"
        )
    return None


def parity_warnings(by_node: dict[str, dict[str, CacheSummary]]) -> list[str]:
    """One warning per node that is behind another in some cache (pure)."""
    if len(by_node) < 2:
        return []
    warnings = []
    for node, caches in by_node.items():
        behind = []
        for name in caches:
            summaries = {n: c[name] for n, c in by_node.items() if name in c}
            if len(summaries) > 1 and (lag := _behind(node, name, summaries)) is not None:
                behind.append(lag)
        if behind:
            warnings.append(
                f"JIT cache of node {node} is behind: {'; '.join(behind)} — it will compile while "
                "its peers wait in a collective; before the first boot empty every node's caches "
                "together, or copy the fullest node's caches to the others "
                "(docs/field-notes.md#uneven-jit-caches)"
            )
    return warnings


async def survey_caches(
    processes: list[ProcessSpec], runners: dict[str, CommandRunner]
) -> dict[str, dict[str, CacheSummary]]:
    """Every node's cache summary, read on all nodes at once; a node that cannot be read is left
    out (the launch's own preflight names it)."""
    by_node: dict[str, list[ProcessSpec]] = {}
    for process in processes:
        by_node.setdefault(process.node, []).append(process)

    def survey(node: str) -> tuple[str, dict[str, CacheSummary]]:
        dirs = cache_dirs(by_node[node])
        if not dirs:
            return node, {}
        try:
            result = runners[node].run(survey_script(dirs))
        except ExecutorError:
            return node, {}
        return node, parse_survey(result.stdout) if result.ok else {}

    found = await asyncio.gather(*(asyncio.to_thread(survey, node) for node in by_node))
    return {node: caches for node, caches in found if caches}


def empty_caches_script(dirs: dict[str, str]) -> list[str]:
    """`sh -c` that empties each cache folder (the folder itself stays) and prints what it did;
    only absolute paths at least two folders deep are touched (`/var/cache/x`, never `/`,
    `/home` or a relative path)."""
    lines = []
    for path in dict.fromkeys(dirs.values()):
        if not path.startswith("/") or "/" not in path.strip("/") or ".." in path.split("/"):
            continue
        folder = shlex.quote(path)
        lines.append(
            f"if [ -d {folder} ]; then n=$(find {folder} -mindepth 1 | wc -l); "
            f'find {folder} -mindepth 1 -delete && echo "emptied {path} ($n entries)"; '
            f'else echo "absent {path}"; fi'
        )
    return ["sh", "-c", "\n".join(lines) or "true"]


def cold_plan(processes: list[ProcessSpec]) -> dict[str, dict[str, str]]:
    """node -> its cache folders that `up --cold` empties."""
    by_node: dict[str, list[ProcessSpec]] = {}
    for process in processes:
        by_node.setdefault(process.node, []).append(process)
    return {node: dirs for node, procs in by_node.items() if (dirs := cache_dirs(procs))}


async def empty_caches(
    processes: list[ProcessSpec], runners: dict[str, CommandRunner]
) -> list[str]:
    """Empty every node's JIT caches at once (a cold boot as a qualification: every rank
    compiles from nothing, together); one line per folder, `node: emptied PATH (N entries)`."""

    def empty(node: str, dirs: dict[str, str]) -> list[str]:
        result = runners[node].run(empty_caches_script(dirs))
        said = [f"{node}: {line}" for line in result.stdout.splitlines() if line.strip()]
        if not result.ok:
            said.append(f"{node}: could not empty every cache: {result.error_line}")
        return said

    plan = cold_plan(processes)
    done = await asyncio.gather(*(asyncio.to_thread(empty, n, d) for n, d in plan.items()))
    return [line for lines in done for line in lines]
