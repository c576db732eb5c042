"""The vLLM release a node runs against the one its cluster file names (engine.version): lint
judged the file's flags by the named release's own parser, so another release may refuse them."""

from __future__ import annotations

import re

from sparkrig.doctor.model import NodeCapture
from sparkrig.doctor.registry import Hit, NodeContext, node_check

_RELEASE = re.compile(r"^\s*v?(\d+\.\d+\.\d+)")


def installed_release(version_output: str) -> str | None:
    """`vllm --version`'s last line, e.g. 0.30.0 (a dev build's 0.30.1.dev12+g… reads 0.30.1)."""
    lines = version_output.strip().splitlines()
    found = _RELEASE.match(lines[-1]) if lines else None
    return found.group(1) if found else None


def release_matches(installed: str, declared: str) -> bool:
    """ "0.30" is any 0.30.x; an exact release must be that release."""
    return installed == declared or installed.startswith(f"{declared}.")


@node_check(
    "engine-version-declared",
    summary="the node runs the vLLM release the cluster file names",
    why="lint checks every rendered flag against the named release's own parser (a flag or "
    "choice another release lacks stops every node at start)",
    source="src/sparkrig/engines/vllm/knowledge/ (engine.version)",
    needs=("engine_version",),
)
def engine_version_declared(capture: NodeCapture, context: NodeContext) -> list[Hit]:
    declared = context.vllm_version
    installed = installed_release(capture.text("engine_version") or "")
    if declared is None or installed is None or release_matches(installed, declared):
        return []
    return [
        Hit(
            "warning",
            f"vLLM {installed} installed; the cluster file is judged against {declared} "
            "(engine.version, or sparkrig's default)",
            f"set engine.version = {installed!r} and run `sparkrig lint` again, or install "
            f"vLLM {declared}",
        )
    ]
