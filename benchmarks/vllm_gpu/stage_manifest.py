"""The manifest of the vLLM test bed's pieces, and the checks both sides run on it.

prepare.py (here) cuts every artifact (the pruned vLLM tarball, each dependency wheel, the
model GGUF) into parts that fill pieces of at most `--piece-mib` in order, and writes one
manifest that names every part with its sha256. Each piece folder carries a copy of it, so
stage.py (on the GPU host) can check a piece alone; assemble.py checks them all and joins the
parts back. Standard library only: it runs on the GPU host before any wheel is unpacked.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

# Where the pieces and what they make go on the GPU host. It is lent bare for a while, so /tmp;
# each can be moved by its variable (the checks here point them at scratch folders).
STAGE_DIR = Path(os.environ.get("VLLM_STAGE_DIR", "/tmp/vllm-stage"))  # noqa: S108
SITE_DIR = Path(os.environ.get("VLLM_SITE_DIR", "/tmp/vllm-site"))  # noqa: S108
MODEL_DIR = Path(os.environ.get("VLLM_MODEL_DIR", "/tmp/vllm-model"))  # noqa: S108
BIN_DIR = Path(os.environ.get("VLLM_BIN_DIR", "/tmp/vllm-bin"))  # noqa: S108

MANIFEST_NAME = "manifest.json"
MANIFEST_VERSION = 1
HASH_CHUNK = 1 << 20


@dataclass(frozen=True)
class Part:
    """One slice of an artifact, stored as `file` in the folder of `piece`."""

    piece: str
    file: str
    size: int
    sha256: str


@dataclass(frozen=True)
class Artifact:
    """A file to rebuild on the GPU host: `kind` is vllm, wheel or gguf."""

    name: str
    kind: str
    size: int
    sha256: str
    parts: tuple[Part, ...]


@dataclass(frozen=True)
class Manifest:
    vllm_version: str
    piece_names: tuple[str, ...]
    artifacts: tuple[Artifact, ...]
    notes: dict[str, str] = field(default_factory=dict)

    def parts_of(self, piece: str) -> list[Part]:
        return [part for art in self.artifacts for part in art.parts if part.piece == piece]

    def of_kind(self, kind: str) -> list[Artifact]:
        return [art for art in self.artifacts if art.kind == kind]

    def to_json(self) -> str:
        body = asdict(self)
        body["version"] = MANIFEST_VERSION
        return json.dumps(body, indent=1, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str) -> Manifest:
        body: dict[str, Any] = json.loads(text)
        if body.get("version") != MANIFEST_VERSION:
            raise ValueError(
                f"manifest version {body.get('version')!r}, this code reads {MANIFEST_VERSION}"
                " — run prepare.py and stage.sh from the same checkout"
            )
        artifacts = tuple(
            Artifact(
                name=art["name"],
                kind=art["kind"],
                size=art["size"],
                sha256=art["sha256"],
                parts=tuple(Part(**part) for part in art["parts"]),
            )
            for art in body["artifacts"]
        )
        return cls(
            vllm_version=body["vllm_version"],
            piece_names=tuple(body["piece_names"]),
            artifacts=artifacts,
            notes=dict(body.get("notes", {})),
        )

    @classmethod
    def read(cls, path: Path) -> Manifest:
        return cls.from_json(path.read_text())


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def piece_problems(manifest: Manifest, piece: str, folder: Path) -> list[str]:
    """What is wrong with one piece folder: a part missing, cut short, changed, or a stray file."""
    if piece not in manifest.piece_names:
        return [f"{piece} is not a piece of this manifest ({', '.join(manifest.piece_names)})"]
    problems = []
    expected = manifest.parts_of(piece)
    for part in expected:
        path = folder / part.file
        if not path.is_file():
            problems.append(f"{piece}/{part.file} is missing")
        elif path.stat().st_size != part.size:
            problems.append(f"{piece}/{part.file} has {path.stat().st_size} bytes, not {part.size}")
        elif sha256_of(path) != part.sha256:
            problems.append(f"{piece}/{part.file} does not match its sha256")
    known = {part.file for part in expected} | {MANIFEST_NAME}
    problems.extend(
        f"{piece}/{path.name} is not in the manifest"
        for path in sorted(folder.iterdir())
        if path.name not in known
    )
    return problems


def cut_into_pieces(
    files: list[tuple[str, str, Path]], capacity: int, reserve: int
) -> tuple[list[str], list[Artifact], list[tuple[Part, Path, int]]]:
    """Lay (name, kind, path) files into pieces of at most `capacity` bytes, in order, cutting
    a file where a piece fills. `reserve` bytes of each piece are kept for the manifest copy.
    The pieces are as few as `capacity` allows and filled evenly, so that each call carries
    about as much as the others and leaves the most room for the tree that travels with it.

    Returns the piece names, the artifacts, and for each part where its bytes come from
    (source path, offset). A file cut in k > 1 parts has parts named NAME.partI-of-k.
    """
    total = sum(path.stat().st_size for _, _, path in files)
    count = max(1, -(-total // (capacity - reserve)))
    room = -(-total // count)
    spans: list[tuple[str, str, Path, int, int, int]] = []  # name, kind, path, piece, offset, n
    piece, used = 0, 0
    for name, kind, path in files:
        offset, size = 0, path.stat().st_size
        while True:
            if used == room:
                piece, used = piece + 1, 0
            take = min(room - used, size - offset)
            spans.append((name, kind, path, piece, offset, take))
            used += take
            offset += take
            if offset >= size:
                break
    names = [f"piece-{index + 1}" for index in range(piece + 1)]
    artifacts: list[Artifact] = []
    sources: list[tuple[Part, Path, int]] = []
    for name, kind, path in files:
        mine = [span for span in spans if span[0] == name]
        parts = []
        for index, (_, _, _, where, offset, take) in enumerate(mine):
            file = name if len(mine) == 1 else f"{name}.part{index + 1}-of-{len(mine)}"
            part = Part(names[where], file, take, _sha256_of_range(path, offset, take))
            parts.append(part)
            sources.append((part, path, offset))
        artifacts.append(Artifact(name, kind, path.stat().st_size, sha256_of(path), tuple(parts)))
    return names, artifacts, sources


def _sha256_of_range(path: Path, offset: int, size: int) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        stream.seek(offset)
        left = size
        while left and (chunk := stream.read(min(HASH_CHUNK, left))):
            digest.update(chunk)
            left -= len(chunk)
    return digest.hexdigest()


def copy_range(source: Path, offset: int, size: int, target: Path) -> None:
    with source.open("rb") as src, target.open("wb") as dst:
        src.seek(offset)
        left = size
        while left and (chunk := src.read(min(HASH_CHUNK, left))):
            dst.write(chunk)
            left -= len(chunk)
