"""Captures on disk: one folder per node, one `PROBE.out` per probe holding its stdout verbatim,
and `meta.json` with the rest (command, exit status, skipped reason, stderr, clock times).
`doctor --out DIR` writes them; `doctor --load DIR` and the tests read them back, so a capture
from any host can be checked anywhere."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from sparkrig.doctor.model import NodeCapture, ToolOutput
from sparkrig.errors import UsageError, validation_problem
from sparkrig.json_files import kind_of, number_problem, read_json_file, read_text_file
from sparkrig.outside_numbers import OutsideNumberError, check_every_number

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


_FIX = "pass the folder `doctor --out` wrote, or save the capture again"


def load_node(folder: Path) -> NodeCapture:
    """A node folder; without `meta.json` every `PROBE.out` counts as answered (exit 0). Every
    file is read as a hostile one: a damaged capture is one line naming the file."""
    meta_path = folder / META
    meta = _meta(meta_path) if meta_path.exists() or meta_path.is_symlink() else {}
    probes = meta.get("probes", {})
    if not isinstance(probes, dict) or not all(isinstance(v, dict) for v in probes.values()):
        raise UsageError(f"{meta_path} is damaged: probes is not an object of probes — {_FIX}")
    outputs: dict[str, Any] = {}
    for path in sorted(folder.glob("*.out")):
        probe = path.name.removesuffix(".out")
        known = probes.get(probe, {"command": probe, "returncode": 0})
        stdout = read_text_file(path, what="doctor capture", fix=_FIX)
        outputs[probe] = {**known, "stdout": stdout}
    for probe, known in probes.items():
        outputs.setdefault(probe, known)
    checked = {probe: _probe(meta_path, probe, fields) for probe, fields in outputs.items()}
    try:
        return NodeCapture(
            node=folder.name,
            reached_by=meta.get("reached_by", f"capture {folder}"),
            unreachable=meta.get("unreachable"),
            outputs=checked,
        )
    except ValidationError as exc:
        raise UsageError(f"{meta_path} is damaged: {validation_problem(exc)} — {_FIX}") from exc


def _probe(meta_path: Path, probe: str, fields: dict[str, Any]) -> ToolOutput:
    try:
        return ToolOutput.model_validate(fields)
    except ValidationError as exc:
        raise UsageError(
            f"{meta_path} is damaged: probe {probe!r}: {validation_problem(exc)} — {_FIX}"
        ) from exc


def _meta(path: Path) -> dict[str, Any]:
    raw = read_json_file(path, what="doctor capture", fix=_FIX)
    if not isinstance(raw, dict):
        raise UsageError(f"{path} is {kind_of(raw)}, not a doctor capture's {META} — {_FIX}")
    try:
        check_every_number(raw, source=str(path))
    except OutsideNumberError as exc:
        raise UsageError(f"doctor capture {number_problem(exc)} — {_FIX}") from exc
    return raw


def load_captures(directory: Path) -> dict[str, NodeCapture]:
    folders = sorted(p for p in directory.iterdir() if p.is_dir()) if directory.is_dir() else []
    if not folders:
        raise UsageError(
            f"{directory} holds no node folders — pass the folder `doctor --out` wrote"
        )
    return {folder.name: load_node(folder) for folder in folders}
