"""Copy one traveled piece into the stage folder of the GPU host, checking every sha256 twice.

A device call carries one piece (as an ignored path of the repo's tree) and the next call
carries another, so each piece is copied out of the tree, into /tmp/vllm-stage/PIECE/
(VLLM_STAGE_DIR overrides), checked where it came from and where it lands. The stage's own
manifest.json must be the piece's: pieces of two prepare runs do not mix. Standard library only.

Run (on the GPU host): bash benchmarks/vllm_gpu/stage.sh .vllm-stage/piece-1
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from stage_manifest import MANIFEST_NAME, STAGE_DIR, Manifest, piece_problems, sha256_of


def stage_piece(folder: Path, stage: Path) -> Manifest:
    """Check `folder`, copy it into `stage`, check the copy; raise SystemExit on a problem."""
    text = (folder / MANIFEST_NAME).read_text()
    manifest = Manifest.from_json(text)
    piece = folder.name
    problems = piece_problems(manifest, piece, folder)
    if problems:
        raise SystemExit(f"{piece} is not whole — run prepare.py again: " + "; ".join(problems))
    top = stage / MANIFEST_NAME
    if top.is_file() and top.read_text() != text:
        raise SystemExit(
            f"{stage} holds pieces of another prepare run — rm -rf {stage}, then stage every"
            " piece of this run again"
        )
    target = stage / piece
    target.mkdir(parents=True, exist_ok=True)
    for part in manifest.parts_of(piece):
        landed = target / part.file
        if landed.is_file() and sha256_of(landed) == part.sha256:
            continue  # staged by an earlier call
        partial = landed.with_name(landed.name + ".partial")
        shutil.copyfile(folder / part.file, partial)
        partial.replace(landed)
    (target / MANIFEST_NAME).write_text(text)
    problems = piece_problems(manifest, piece, target)
    if problems:
        raise SystemExit(f"{piece} changed on its way into {stage}: " + "; ".join(problems))
    top.parent.mkdir(parents=True, exist_ok=True)
    top.write_text(text)
    return manifest


def staged_pieces(manifest: Manifest, stage: Path) -> list[str]:
    return [name for name in manifest.piece_names if (stage / name / MANIFEST_NAME).is_file()]


def main() -> None:
    if len(sys.argv) != 2:
        raise SystemExit("usage: bash benchmarks/vllm_gpu/stage.sh PIECE_DIR")
    folder = Path(sys.argv[1]).resolve()
    manifest = stage_piece(folder, STAGE_DIR)
    size = sum(part.size for part in manifest.parts_of(folder.name)) / (1 << 20)
    done = staged_pieces(manifest, STAGE_DIR)
    missing = [name for name in manifest.piece_names if name not in done]
    print(f"staged {folder.name} ({size:.1f} MiB) into {STAGE_DIR}: {len(done)} of", end=" ")
    print(f"{len(manifest.piece_names)} pieces", end="")
    if missing:
        print(f"; still to stage: {', '.join(missing)}")
    else:
        print("; all there: python3 benchmarks/vllm_gpu/assemble.py")


if __name__ == "__main__":
    main()
