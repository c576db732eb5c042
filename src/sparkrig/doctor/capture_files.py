"""Captures on disk: one folder per node, one `PROBE.out` per probe holding its stdout verbatim,
and `meta.json` with the rest (command, exit status, skipped reason, stderr, clock times).
`doctor --save DIR` writes them; `doctor --load DIR` and the tests read them back, so a capture
from any host can be checked anywhere."""

from __future__ import annotations

import json
from pathlib import Path

from sparkrig.doctor.model import NodeCapture, ToolOutput
from sparkrig.errors import UsageError

META = "meta.json"


def save_captures(captures: dict[str, NodeCapture], directory: Path) -> list[Path]:
    written = []
    for name, capture in captures.items():
        folder = directory / name
        folder.mkdir(parents=True, exist_ok=True)
        meta: dict[str, object] = {"reached_by": capture.reached_by}
        if capture.unreachable is not None:
            meta["unreachable"] = capture.unreachable
        probes = {}
        for probe, output in capture.outputs.items():
            (folder / f"{probe}.out").write_text(output.stdout, encoding="utf-8")
            written.append(folder / f"{probe}.out")
            probes[probe] = output.model_dump(exclude={"stdout"}, exclude_none=True)
        meta["probes"] = probes
        (folder / META).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
        written.append(folder / META)
    return written


def load_node(folder: Path) -> NodeCapture:
    """A node folder; without `meta.json` every `PROBE.out` counts as answered (exit 0)."""
    meta_path = folder / META
    meta = json.loads(meta_path.read_text(encoding="utf-8")) if meta_path.exists() else {}
    probes = meta.get("probes", {})
    outputs = {}
    for path in sorted(folder.glob("*.out")):
        probe = path.name.removesuffix(".out")
        known = probes.get(probe, {"command": probe, "returncode": 0})
        outputs[probe] = ToolOutput(**known, stdout=path.read_text(encoding="utf-8"))
    for probe, known in probes.items():
        if probe not in outputs:
            outputs[probe] = ToolOutput(**known)
    return NodeCapture(
        node=folder.name,
        reached_by=meta.get("reached_by", f"capture {folder}"),
        unreachable=meta.get("unreachable"),
        outputs=outputs,
    )


def load_captures(directory: Path) -> dict[str, NodeCapture]:
    folders = sorted(p for p in directory.iterdir() if p.is_dir()) if directory.is_dir() else []
    if not folders:
        raise UsageError(
            f"{directory} holds no node folders — pass the folder `doctor --save` wrote"
        )
    return {folder.name: load_node(folder) for folder in folders}
