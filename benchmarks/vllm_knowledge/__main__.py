"""Learn what a vLLM release accepts, from the release itself: `scripts/vllm-knowledge 0.30.0`.

For each version: `pip download vllm==X --no-deps` into a cache outside the repository, a
throwaway venv under /tmp with CPU torch and the wheel installed without dependencies, then only
the modules the parser's import chain asks for (each `ModuleNotFoundError` names one; it is
installed and the import retried). `dump_inside.py` then runs vLLM's own `vllm serve` parser and
its own CUDA-graph sizing code in that venv; the result, with the wheel's name and sha256, lands in
one file per release under src/sparkrig/engines/vllm/knowledge/ (vllm-0.30.0.json, ...), which
`sparkrig lint` reads with no network and no vLLM. No GPU is needed.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT_DIR = HERE.parents[1] / "src" / "sparkrig" / "engines" / "vllm" / "knowledge"
CACHE = Path.home() / ".cache" / "sparkrig" / "vllm-knowledge" / "wheels"
TORCH = "torch==2.13.0"  # CPU build; vLLM's parser and config classes import torch, never CUDA
MAX_IMPORT_ROUNDS = 60
# import name -> distribution name, where they differ
DISTRIBUTIONS = {
    "yaml": "pyyaml",
    "PIL": "pillow",
    "zmq": "pyzmq",
    "cpuinfo": "py-cpuinfo",
    "google": "protobuf",
    "cv2": "opencv-python-headless",
    "sklearn": "scikit-learn",
    "jwt": "pyjwt",
}
MISSING = re.compile(r"No module named '([A-Za-z0-9_]+)")


def run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, check=False)


def wheel_for(version: str, cache: Path) -> Path:
    cache.mkdir(parents=True, exist_ok=True)
    found = sorted(cache.glob(f"vllm-{version}-*.whl"))
    if not found:
        download = ["pip", "download", f"vllm=={version}", "--no-deps", "-d", str(cache)]
        done = run([sys.executable, "-m", *download])
        if done.returncode != 0:
            raise SystemExit(f"pip download vllm=={version} failed: {done.stderr[-400:]}")
        found = sorted(cache.glob(f"vllm-{version}-*.whl"))
    return found[0]


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def wheel_commit(wheel: Path) -> str | None:
    """The git commit vLLM's build stamped into vllm/_version.py (`commit_id = 'gffd46bfab'`)."""
    with zipfile.ZipFile(wheel) as archive:
        text = archive.read("vllm/_version.py").decode("utf-8")
    found = re.search(r"commit_id\s*=\s*'g?([0-9a-f]+)'", text)
    return found.group(1) if found else None


def prepare_venv(venv: Path, wheel: Path) -> Path:
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", TORCH], check=True)
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall", str(wheel)],
        check=True,
    )
    return python


def dump(python: Path) -> tuple[dict[str, Any], list[str]]:
    """vLLM's answers, and the distributions its import chain needed on top of the wheel."""
    installed: list[str] = []
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "knowledge.json"
        for _ in range(MAX_IMPORT_ROUNDS):
            done = run([str(python), str(HERE / "dump_inside.py"), str(out)])
            if done.returncode == 0:
                return json.loads(out.read_text(encoding="utf-8")), installed
            missing = MISSING.findall(done.stderr)
            if not missing or missing[-1] == "vllm":  # a vLLM module moved: not a dependency
                raise SystemExit(f"vLLM's parser did not load: {done.stderr[-1500:]}")
            name = DISTRIBUTIONS.get(missing[-1], missing[-1])
            if name in installed:
                raise SystemExit(f"{name} installed but still missing: {done.stderr[-800:]}")
            subprocess.run([str(python), "-m", "pip", "install", "-q", name], check=True)
            installed.append(name)
    raise SystemExit(f"gave up after {MAX_IMPORT_ROUNDS} missing modules: {installed}")


def learn(version: str, cache: Path, venv: Path) -> Path:
    wheel = wheel_for(version, cache)
    python = prepare_venv(venv, wheel)
    answers, installed = dump(python)
    listed = run([str(python), "-m", "pip", "list", "--format=freeze", "--exclude", "vllm"])
    if answers["vllm_version"] != version:
        raise SystemExit(f"the venv's vLLM says {answers['vllm_version']}, wanted {version}")
    knowledge = {
        "schema": 1,
        "version": version,
        "provenance": {
            "wheel": wheel.name,
            "sha256": sha256(wheel),
            "commit": wheel_commit(wheel),
            "extracted_on": datetime.date.today().isoformat(),
            "method": "import: vLLM's own make_arg_parser, VllmConfig._set_cudagraph_sizes and "
            "CompilationConfig.adjust_cudagraph_sizes_for_spec_decode, CPU platform, CPU torch",
            "torch": TORCH,
            "import_chain_installed_this_run": installed,
            "venv_packages": listed.stdout.split(),
            "script": "benchmarks/vllm_knowledge (scripts/vllm-knowledge)",
        },
        "reasoning_parsers": answers["reasoning_parsers"],
        "flags": answers["flags"],
        "capture_grid": answers["capture_grid"],
    }
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    target = OUT_DIR / f"vllm-{version}.json"
    target.write_text(compact_json(knowledge), encoding="utf-8")
    return target


def compact_json(value: dict[str, Any]) -> str:
    """One flag or grid row per line: small, and a new release diffs line by line."""
    head = {k: v for k, v in value.items() if k not in ("flags", "capture_grid")}
    lines = json.dumps(head, indent=1)[:-2] + ",\n"
    flag_rows = ",\n  ".join(json.dumps(row, separators=(",", ":")) for row in value["flags"])
    grid = value["capture_grid"]
    grid_rows = ",\n  ".join(json.dumps(row, separators=(",", ":")) for row in grid["rows"])
    return (
        f'{lines} "flags": [\n  {flag_rows}\n ],\n "capture_grid": {{"max_num_batched_tokens": '
        f'{grid["max_num_batched_tokens"]}, "rows": [\n  {grid_rows}\n ]}}\n}}\n'
    )


def main() -> None:
    parser = argparse.ArgumentParser(prog="scripts/vllm-knowledge", description=__doc__)
    parser.add_argument("versions", nargs="+", help="exact vLLM releases, e.g. 0.30.0")
    parser.add_argument("--cache", type=Path, default=CACHE, help="where the wheels are kept")
    parser.add_argument(
        "--venv",
        type=Path,
        default=None,
        help="reuse this venv across versions (default: a fresh one per version under /tmp)",
    )
    args = parser.parse_args()
    for version in args.versions:
        venv = args.venv or Path(tempfile.mkdtemp(prefix=f"vllm-knowledge-{version}-"))
        print(f"vllm {version}: {learn(version, args.cache, venv)}")
        if args.venv is None:
            shutil.rmtree(venv, ignore_errors=True)


if __name__ == "__main__":
    main()
