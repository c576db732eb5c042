"""`sparkrig diag`: one archive for a bug report, as launchers of the field ship (sparkrun's
`--collect-diagnostics`): the launch state, every rank's log end and the signature scan of every
rank's log and kernel log, doctor's saved captures, the latest receipts and the fabric record,
with API keys, tokens and prompt text removed (`doctor.redact`). What could not be included is
listed in the manifest with why, never silently left out. The archive is written to a temporary
name and renamed, so a half-written bundle never carries the final name."""

from __future__ import annotations

import io
import json
import os
import tarfile
import time
import zlib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sparkrig import __version__
from sparkrig.doctor.redact import redact_json, redact_text
from sparkrig.errors import SparkrigError, UsageError
from sparkrig.json_files import read_bytes_file, read_json_file
from sparkrig.launch.forensics import ForensicsReport
from sparkrig.launch.lifecycle import read_log
from sparkrig.launch.state import LaunchState

ROOT = "sparkrig-diag"
_TEXT_LIMIT = 4 * 1024 * 1024  # bytes of one doctor capture kept; the rest is cut and said


class Bundle:
    """Members collected in memory (a bundle is logs and JSON: megabytes), written at once."""

    def __init__(self) -> None:
        self.members: dict[str, bytes] = {}
        self.missing: list[str] = []

    def text(self, name: str, text: str) -> None:
        self.members[f"{ROOT}/{name}"] = redact_text(text).encode()

    def json(self, name: str, value: Any) -> None:
        body = json.dumps(redact_json(value), indent=2, default=str) + "\n"
        self.members[f"{ROOT}/{name}"] = body.encode()


def add_launch(bundle: Bundle, state: LaunchState, report: ForensicsReport, lines: int) -> None:
    safe = state.cluster.replace("/", "_")
    bundle.json(f"launch/{safe}/state.json", state.model_dump(mode="json"))
    bundle.json(f"launch/{safe}/scan.json", report.model_dump(mode="json"))
    for record in state.started:
        name = f"launch/{safe}/logs/{record.process.key.replace('/', '-')}.log"
        try:
            bundle.text(name, read_log(record, lines))
        except Exception as exc:  # noqa: BLE001 - any failure to read is listed, not fatal
            bundle.missing.append(f"{name}: {exc}")


def add_doctor(bundle: Bundle, folder: Path) -> None:
    if not folder.is_dir():
        bundle.missing.append(f"doctor captures: {folder} is not a folder")
        return
    for path in sorted(p for p in folder.rglob("*") if not p.is_dir()):  # a pipe is listed
        relative = path.relative_to(folder).as_posix()
        try:
            data = read_bytes_file(path, what="doctor capture", fix="", limit=_TEXT_LIMIT + 1)
        except UsageError as exc:
            bundle.missing.append(f"doctor/{relative}: {exc}")
            continue
        if len(data) > _TEXT_LIMIT:
            data = data[:_TEXT_LIMIT]
            bundle.missing.append(f"doctor/{relative}: cut after its first {_TEXT_LIMIT} bytes")
        text = data.decode("utf-8", errors="replace")
        if path.suffix == ".json":
            try:
                bundle.json(f"doctor/{relative}", json.loads(text))
                continue
            except ValueError:
                pass
        bundle.text(f"doctor/{relative}", text)


def latest_receipts(folder: Path, count: int) -> list[Path]:
    """The newest `count` JSON files in `folder` (by modification time), newest first."""
    if not folder.is_dir():
        raise UsageError(f"{folder} is not a folder — pass --receipts the folder of your receipts")
    found = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    return found[:count]


def add_receipts(bundle: Bundle, paths: list[Path]) -> None:
    for path in paths:
        try:
            bundle.json(f"receipts/{path.name}", read_json_file(path, what="receipt", fix=""))
        except UsageError as exc:
            bundle.missing.append(str(exc))


def add_file_json(bundle: Bundle, name: str, path: Path, what: str) -> None:
    if not path.is_file():
        bundle.missing.append(f"{what}: no {path}")
        return
    try:
        bundle.json(name, read_json_file(path, what=what, fix=""))
    except UsageError as exc:
        bundle.missing.append(str(exc))


def is_diag_archive(path: Path) -> bool:
    """Whether `path` is an archive `write_bundle` wrote: gzip whose first tar member lies under
    ROOT (members are written sorted, all under it). Reads at most 64 KiB."""
    try:
        head = read_bytes_file(path, what="archive", fix="", limit=1 << 16)
        start = zlib.decompressobj(wbits=31).decompress(head, 1 << 14)
        with tarfile.open(fileobj=io.BytesIO(start), mode="r|") as archive:
            first = archive.next()  # past the PAX header tarfile writes before it
    except (SparkrigError, zlib.error, tarfile.TarError, EOFError):
        return False
    return first is not None and first.name.startswith(f"{ROOT}/")


def write_bundle(bundle: Bundle, out: Path) -> Path:
    manifest = {
        "sparkrig": __version__,
        "written_at": datetime.now(UTC).isoformat(),
        "members": sorted(bundle.members),
        "not_included": bundle.missing,
        "redacted": "API keys, tokens, passwords and prompt/reply text are replaced by [removed]",
    }
    bundle.json("manifest.json", manifest)
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(f".{out.name}.{os.getpid()}.partial")
    with tarfile.open(partial, "w:gz") as archive:
        for name, data in sorted(bundle.members.items()):
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), time.time(), 0o644
            archive.addfile(info, io.BytesIO(data))
    partial.replace(out)
    return out
