"""Make vLLM 0.26.0 runnable on the GPU host from the staged pieces, and the model it serves.

Once stage.sh has put every piece into /tmp/vllm-stage, this checks them all, joins each
artifact, and then, each step skipped when an earlier run finished it:
  wheels   pip installs the carried wheels into /tmp/vllm-site (no index, no dependencies)
  vllm     unpacks the pruned vLLM tarball there too (a wheel is plain files: no install step)
  model    converts the GGUF into /tmp/vllm-model (convert_gguf.py, with gguf from the site)
  wrapper  writes /tmp/vllm-bin/vllm, which runs vLLM's CLI on this python with that site
The host has no zstd binary; the zstandard wheel installed by the first step unpacks vLLM.
Each folder moves with its variable (stage_manifest.py): VLLM_STAGE_DIR, VLLM_SITE_DIR, ...

Run (on the GPU host): python3 benchmarks/vllm_gpu/assemble.py [--skip model]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shlex
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable
from pathlib import Path

from stage_manifest import (
    BIN_DIR,
    HASH_CHUNK,
    MANIFEST_NAME,
    MODEL_DIR,
    SITE_DIR,
    STAGE_DIR,
    Artifact,
    Manifest,
    piece_problems,
    sha256_of,
)

HERE = Path(__file__).resolve().parent
# the project's converter, which `sparkrig engine install vllm-cpu` runs too
CONVERTER = HERE.parents[1] / "src" / "sparkrig" / "engines" / "vllm" / "convert_gguf.py"
JOINED = STAGE_DIR / "joined"
WHEELS_MARK = ".sparkrig-wheels"
VLLM_MARK = ".sparkrig-vllm"
MODEL_MARK = ".converted-from"  # convert_gguf.DONE_MARK
ZSTD_WINDOW = 1 << 27  # the tarball is made with zstd --long=27
# What vLLM needs on this host, each found on the H200 (README.md, "Measured before").
WRAPPER_ENV = {
    "HF_HUB_OFFLINE": "1",  # no network: never ask the hub
    "VLLM_NO_USAGE_STATS": "1",
    "VLLM_USE_FLASHINFER_SAMPLER": "0",  # flashinfer is not carried; the engine dies without it
    "NCCL_NVLS_ENABLE": "0",  # the host's NCCL settings: no NVLink multicast
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
}


def staged_manifest() -> Manifest:
    top = STAGE_DIR / MANIFEST_NAME
    if not top.is_file():
        raise SystemExit(f"nothing staged in {STAGE_DIR} — run stage.sh on each piece first")
    manifest = Manifest.read(top)
    problems = []
    for piece in manifest.piece_names:
        folder = STAGE_DIR / piece
        if not folder.is_dir():
            problems.append(f"{piece} is not staged: bash benchmarks/vllm_gpu/stage.sh {piece}")
        else:
            problems += piece_problems(manifest, piece, folder)
    if problems:
        raise SystemExit("the stage is not complete — " + "; ".join(problems))
    return manifest


def joined(artifact: Artifact) -> Path:
    """The artifact rebuilt from its parts under JOINED (kept: a re-run only re-checks it)."""
    target = JOINED / artifact.name
    if target.is_file() and sha256_of(target) == artifact.sha256:
        return target
    JOINED.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    partial = target.with_name(target.name + ".partial")
    with partial.open("wb") as out:
        for part in artifact.parts:
            with (STAGE_DIR / part.piece / part.file).open("rb") as source:
                while chunk := source.read(HASH_CHUNK):
                    digest.update(chunk)
                    out.write(chunk)
    if digest.hexdigest() != artifact.sha256:
        raise SystemExit(f"{artifact.name} joined wrong — rm -rf {STAGE_DIR} and stage again")
    partial.replace(target)
    return target


def mark_of(artifacts: list[Artifact]) -> str:
    return "".join(f"{art.sha256} {art.name}\n" for art in sorted(artifacts, key=lambda a: a.name))


def is_marked(path: Path, text: str) -> bool:
    return path.is_file() and path.read_text() == text


def install_wheels(manifest: Manifest) -> str:
    wheels = manifest.of_kind("wheel")
    mark = SITE_DIR / WHEELS_MARK
    if is_marked(mark, mark_of(wheels)):
        return f"{len(wheels)} wheels already in {SITE_DIR}"
    paths = [str(joined(art)) for art in wheels]
    command = [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    command += ["--root-user-action=ignore"]
    command += ["--no-index", "--no-deps", "--no-compile", "--upgrade", "--target", str(SITE_DIR)]
    subprocess.run(command + paths, check=True)
    mark.write_text(mark_of(wheels))
    return f"{len(wheels)} wheels into {SITE_DIR}"


def unpack_vllm(manifest: Manifest) -> str:
    (tarball,) = manifest.of_kind("vllm")
    mark = SITE_DIR / VLLM_MARK
    if is_marked(mark, mark_of([tarball])):
        return f"vllm {manifest.vllm_version} already in {SITE_DIR}"
    sys.path.insert(0, str(SITE_DIR))
    import zstandard  # type: ignore[import-not-found]  # noqa: PLC0415 - from the first step

    for old in [SITE_DIR / "vllm", *SITE_DIR.glob("vllm-*.dist-info")]:
        shutil.rmtree(old, ignore_errors=True)
    decompressor = zstandard.ZstdDecompressor(max_window_size=ZSTD_WINDOW)
    count = 0
    with (
        joined(tarball).open("rb") as raw,
        decompressor.stream_reader(raw) as stream,
        tarfile.open(fileobj=stream, mode="r|") as tar,
    ):
        for member in tar:
            tar.extract(member, SITE_DIR, filter="data")
            count += 1
    mark.write_text(mark_of([tarball]))
    return f"vllm {manifest.vllm_version}: {count} files into {SITE_DIR}"


def convert_model(manifest: Manifest, python: str) -> str:
    (gguf,) = manifest.of_kind("gguf")
    source_id = f"{gguf.name} {gguf.sha256}"
    if is_marked(MODEL_DIR / MODEL_MARK, source_id + "\n"):
        return f"{MODEL_DIR} already made from {gguf.name}"
    env = {**os.environ, "PYTHONPATH": _path_with(SITE_DIR), "HF_HUB_OFFLINE": "1"}
    env["TQDM_DISABLE"] = "1"  # transformers' per-tensor progress bar, 272 lines in a log
    command = [python, str(CONVERTER), str(joined(gguf)), str(MODEL_DIR), source_id]
    subprocess.run(command, check=True, env=env)
    return f"{MODEL_DIR} from {gguf.name}"


def write_wrapper(python: str) -> str:
    lines = [
        "#!/bin/sh",
        "# Written by benchmarks/vllm_gpu/assemble.py: vLLM from the carried site on this host's",
        "# python, with what the host needs (a variable already set wins).",
        f'export PYTHONPATH={shlex.quote(str(SITE_DIR))}"${{PYTHONPATH:+:$PYTHONPATH}}"',
    ]
    lines += [f'export {name}="${{{name}:-{value}}}"' for name, value in WRAPPER_ENV.items()]
    lines.append(f'exec {shlex.quote(python)} -m vllm.entrypoints.cli.main "$@"')
    BIN_DIR.mkdir(parents=True, exist_ok=True)
    wrapper = BIN_DIR / "vllm"
    wrapper.write_text("\n".join(lines) + "\n")
    wrapper.chmod(0o755)
    return f"{wrapper} (python {python})"


def _path_with(folder: Path) -> str:
    existing = os.environ.get("PYTHONPATH")
    return f"{folder}:{existing}" if existing else str(folder)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--skip", action="append", default=[], choices=["wheels", "vllm", "model", "wrapper"]
    )
    parser.add_argument(
        "--python", default=sys.executable, help="the python that converts and serves"
    )
    args = parser.parse_args()
    steps: list[tuple[str, Callable[[Manifest], str]]] = [
        ("wheels", install_wheels),
        ("vllm", unpack_vllm),
        ("model", lambda manifest: convert_model(manifest, args.python)),
        ("wrapper", lambda _: write_wrapper(args.python)),
    ]
    started = time.monotonic()
    manifest = staged_manifest()
    size = sum(art.size for art in manifest.artifacts) / (1 << 20)
    print(f"{'check':8} {len(manifest.piece_names)} pieces, {size:.1f} MiB", end="")
    print(f"  {time.monotonic() - started:6.1f} s", flush=True)
    SITE_DIR.mkdir(parents=True, exist_ok=True)
    for name, step in steps:
        if name in args.skip:
            print(f"{name:8} skipped (--skip)")
            continue
        began = time.monotonic()
        what = step(manifest)
        print(f"{name:8} {what}  {time.monotonic() - began:6.1f} s", flush=True)
    print(f"{'all':8} {time.monotonic() - started:.1f} s")
    print(f"next: {BIN_DIR / 'vllm'} serve {MODEL_DIR} (README.md beside this file has the flags)")


if __name__ == "__main__":
    main()
