"""The README's install, tried as a user does it: a wheel of the clone installed into a fresh venv
gives the `sparkrig` command, and the command finds its package data (the recipes, vLLM's parser
data, the prefill corpus) from any working directory, not only from inside the clone.

The wheel is built from a copy of the files git would give a clone (so a stale `build/` folder
in the work tree cannot lend the wheel a file its package data rules leave out). Its
dependencies come from the package registry through pip's cache; where the registry cannot be
reached the test is skipped, saying so. 20 to 30 s on a 2-core machine with pip's cache warm,
most of it pip installing the dependencies.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from sparkrig.bench.corpus import corpus_sha256

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "pair-vllm.toml"
# what pip says when it never reached the registry (its words since pip 20)
UNREACHABLE = (
    "Failed to establish a new connection",
    "Temporary failure in name resolution",
    "Network is unreachable",
    "NewConnectionError",
    "ConnectTimeoutError",
    "Read timed out",
    "ProxyError",
)


def run(*command: str | Path, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def pip_or_skip(*command: str | Path, cwd: Path) -> None:
    """A pip command that may need the registry: skipped where it is out of reach."""
    done = run(*command, "--retries", "2", "--timeout", "30", cwd=cwd)
    said = done.stdout + done.stderr
    if done.returncode != 0 and any(marker in said for marker in UNREACHABLE):
        pytest.skip(f"the package registry cannot be reached: {said.strip().splitlines()[-1]}")
    assert done.returncode == 0, said


def clone_files() -> list[str]:
    """The files a clone of this tree has: tracked, or new and not ignored."""
    listed = run("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=ROOT)
    if listed.returncode != 0:
        pytest.skip(f"not a git work tree: {listed.stderr.strip()}")
    return [name for name in listed.stdout.split("\0") if name and (ROOT / name).is_file()]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[str]]:
    """The venv's `sparkrig`, the wheel, and the files of the clone it was built from."""
    tmp = tmp_path_factory.mktemp("wheel")
    files = clone_files()
    clone = tmp / "clone"
    for name in files:
        (clone / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, clone / name)
    pip_or_skip(
        sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", tmp / "dist", clone, cwd=tmp
    )
    (wheel,) = (tmp / "dist").glob("sparkrig-*.whl")
    venv = tmp / "venv"
    created = run(sys.executable, "-m", "venv", venv, cwd=tmp)
    assert created.returncode == 0, created.stderr
    pip_or_skip(venv / "bin" / "python", "-m", "pip", "install", wheel, cwd=tmp)
    return venv / "bin" / "sparkrig", wheel, files


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A working directory with nothing of the clone in it but the example cluster file."""
    shutil.copy2(EXAMPLE, tmp_path / EXAMPLE.name)
    return tmp_path


def test_the_wheel_holds_every_file_of_the_package(installed: tuple[Path, Path, list[str]]) -> None:
    _, wheel, files = installed
    package = {name.removeprefix("src/") for name in files if name.startswith("src/sparkrig/")}
    held = set(zipfile.ZipFile(wheel).namelist())
    lacks = sorted(package - held)
    assert not lacks, f"the wheel lacks {lacks} — add them to pyproject.toml's package-data"


def test_the_installed_command_prints_its_version(
    installed: tuple[Path, Path, list[str]], outside: Path
) -> None:
    sparkrig, _, _ = installed
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    done = run(sparkrig, "--version", cwd=outside)
    assert (done.returncode, done.stdout.strip()) == (0, version), done.stderr


def test_the_installed_command_lints_the_example(
    installed: tuple[Path, Path, list[str]], outside: Path
) -> None:
    sparkrig, _, _ = installed
    done = run(sparkrig, "lint", EXAMPLE.name, cwd=outside)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{EXAMPLE.name}: 0 errors" in done.stdout


def test_lint_reads_vllms_parser_data_from_the_installed_package(
    installed: tuple[Path, Path, list[str]], outside: Path
) -> None:
    """An option vLLM 0.30's parser lacks is named from the bundled parser data; without the
    data lint fails with 'no vLLM knowledge for version'."""
    sparkrig, _, _ = installed
    text = EXAMPLE.read_text().replace('"--async-scheduling"', '"--no-such-vllm-option"')
    (outside / "unknown-option.toml").write_text(text)
    done = run(sparkrig, "lint", "unknown-option.toml", cwd=outside)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "vLLM 0.30.0 has no option --no-such-vllm-option" in done.stdout, done.stdout


def test_the_installed_recipes_and_corpus_are_found(
    installed: tuple[Path, Path, list[str]], outside: Path
) -> None:
    """Every catalog recipe loads from the installed package and lints clean there; bench's
    prefill corpus reads whole."""
    sparkrig, _, _ = installed
    python = sparkrig.with_name("python")
    corpus = run(
        python,
        "-c",
        "from sparkrig.bench.corpus import corpus_sha256; print(corpus_sha256())",
        cwd=outside,
    )
    assert (corpus.returncode, corpus.stdout.strip()) == (0, corpus_sha256()), corpus.stderr
    listed = run(
        python,
        "-c",
        "from sparkrig.recipes import recipe_names, recipe_path\n"
        "for name in recipe_names(): print(recipe_path(name))",
        cwd=outside,
    )
    recipes = listed.stdout.split()
    assert listed.returncode == 0, listed.stderr
    assert len(recipes) == len(list((ROOT / "src" / "sparkrig" / "recipes").glob("*.toml")))
    for recipe in recipes:
        assert "site-packages" in recipe, recipe  # the installed copy, not the clone's
        done = run(sparkrig, "lint", recipe, cwd=outside)
        assert done.returncode == 0, done.stdout + done.stderr
