"""The tutorials run as written: every shell block says where it runs, the blocks marked `here`
run on this machine command by command with the output they show, and the blocks run elsewhere
name a test that runs each of their commands with every option shown (tests/docs/tutorial.py)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest

from sparkrig.engines.llamacpp.build import EngineInstall
from tests.conftest import SPARKRIG
from tests.docs.pictures import PICTURES, RECORD, REFRESH_ENV, digests, drawn_by, make_pictures
from tests.docs.tutorial import (
    Block,
    blocks,
    is_run_by,
    journey_mismatches,
    missing_lines,
    sparkrig_words,
    string_runs,
)
from tests.report.browser import find_chromium

ROOT = Path(__file__).resolve().parents[2]
TUTORIALS = sorted((ROOT / "docs" / "tutorials").glob("*.md"))


def test_there_are_tutorials_and_each_runs_something_here() -> None:
    assert {page.stem for page in TUTORIALS} >= {"local", "pair", "ring"}
    for page in TUTORIALS:
        assert any(block.runs_in == "here" for block in blocks(page)), page.name


@pytest.mark.parametrize("page", TUTORIALS, ids=lambda page: page.stem)
def test_every_block_says_where_it_runs_and_that_test_runs_it(page: Path) -> None:
    wrong = []
    for block in blocks(page):
        if block.runs_in in {"here", "gpu"}:
            continue
        if block.runs_in is None:
            wrong.append(f"{block.where}: no `<!-- run: … -->` marker before the block")
            continue
        test_file = ROOT / block.runs_in
        if not test_file.is_file():
            wrong.append(f"{block.where}: {block.runs_in} does not exist")
            continue
        runs = string_runs(test_file)
        for command in block.commands:
            words = sparkrig_words(command)
            if words and not is_run_by(words, runs):
                wrong.append(f"{block.where}: {block.runs_in} does not run `{command}`")
    assert not wrong, "\n".join(wrong)


def test_a_block_whose_test_does_not_run_it_is_caught(tmp_path: Path) -> None:
    test_file = tmp_path / "test_x.py"
    test_file.write_text('def test_x():\n    run("fabric", "plan", cluster, "--out", folder)\n')
    runs = string_runs(test_file)
    assert is_run_by(sparkrig_words("sparkrig fabric plan CLUSTER.toml --out plan"), runs)
    assert not is_run_by(sparkrig_words("sparkrig fabric plan CLUSTER.toml --json"), runs)
    assert not is_run_by(sparkrig_words("sparkrig fabric apply CLUSTER.toml"), runs)
    assert missing_lines(
        ["ready: … at http://h/v1", "gone"], "ready: a pid 3\n at http://h/v1"
    ) == ["gone"]


def _script(runnable: list[Block], folder: Path) -> str:
    lines = ["set +e", "trap 'kill $(jobs -p) 2>/dev/null' EXIT"]
    for number, block in enumerate(runnable):
        body = "\n".join(block.commands)
        out = shlex.quote(str(folder / f"block{number}.out"))
        lines.append(f"{{\n{body}\n}} > {out} 2>&1; echo $? > {out}.rc")
    return "\n".join(lines) + "\n"


def run_here(page: Path, folder: Path) -> list[str]:
    """Run the page's `here` blocks in one shell, in order; what did not go as the page says."""
    runnable = [block for block in blocks(page) if block.runs_in == "here"]
    env = {
        **os.environ,
        "PATH": f"{Path(SPARKRIG).parent}{os.pathsep}{os.environ['PATH']}",
        "SPARKRIG_STATE_DIR": str(folder / "state"),
        "COLUMNS": "160",
    }
    try:
        subprocess.run(
            ["bash", "-c", _script(runnable, folder)],
            cwd=folder,
            env=env,
            timeout=900,
            check=False,
        )
    finally:
        subprocess.run(
            [SPARKRIG, "down", "--apply"], env=env, cwd=folder, capture_output=True, check=False
        )
    wrong = []
    for number, block in enumerate(runnable):
        out = folder / f"block{number}.out"
        printed = out.read_text(errors="replace") if out.exists() else ""
        rc_file = out.with_suffix(".out.rc")
        rc = int(rc_file.read_text()) if rc_file.exists() else None
        if rc != block.exit_code:
            tail = "\n".join(printed.splitlines()[-8:])
            wrong.append(f"{block.where}: exit {rc}, the page says {block.exit_code}:\n{tail}")
        for line in missing_lines(block.shown, printed):
            wrong.append(f"{block.where}: the output holds no `{line}`")
    return wrong


@pytest.mark.engine
def test_the_local_tutorial_runs_as_written(tmp_path: Path, engine: EngineInstall) -> None:
    wrong = run_here(ROOT / "docs" / "tutorials" / "local.md", tmp_path)
    assert not wrong, "\n".join(wrong)
    assert (tmp_path / "report.html").stat().st_size > 10_000
    # the README's pictures come from this run, drawn in a real browser
    chromium = find_chromium()
    if chromium is None:
        pytest.skip("no Chromium for the pictures (scripts/ensure-test-tools installs it)")
    made = make_pictures(
        tmp_path / "baseline.check.json", tmp_path / "report.html", tmp_path, chromium
    )
    for picture in made.values():
        assert picture.read_bytes().startswith(b"\x89PNG")
        assert picture.stat().st_size > 20_000


def test_the_pictures_are_current() -> None:
    """Made by the code that draws them now (pictures.py says how to make them again)."""
    for name in drawn_by():
        assert (PICTURES / name).read_bytes().startswith(b"\x89PNG"), name
    assert json.loads(RECORD.read_text()) == digests(), (
        "the README's pictures are stale: "
        f"{REFRESH_ENV}=1 .venv/bin/pytest tests/docs -k local_tutorial"
    )


def test_a_change_to_the_drawing_code_makes_the_pictures_stale(tmp_path: Path) -> None:
    drawer = tmp_path / "check_table.py"
    drawer.write_text("WIDTH = 150\n")
    before = digests({"check-table.png": [drawer]}, tmp_path)
    drawer.write_text("WIDTH = 120\n")
    assert digests({"check-table.png": [drawer]}, tmp_path) != before


PAIR = ROOT / "docs" / "tutorials" / "pair.md"
PAIR_JOURNEY = "tests/journey/test_pair_journey.py"


def test_the_pair_tutorial_shows_what_its_journey_printed() -> None:
    """Against the committed transcript; the journey itself checks its live one at its end."""
    steps = json.loads((ROOT / "docs" / "journeys" / "journey-pair.json").read_text())["steps"]
    assert not journey_mismatches(PAIR, PAIR_JOURNEY, steps)


def test_a_shown_line_the_journey_did_not_print_is_caught() -> None:
    steps = [
        {"step": "sparkrig lint x.toml", "stdout": "x.toml: 0 errors, 2 warnings", "stderr": ""}
    ]
    page_lines = PAIR.read_text()
    assert "pair.toml: 0 errors, 0 warnings" in page_lines
    # the pair page's lint block runs here, so check a made-up page that points at the journey
    assert missing_lines(["…: 0 errors, 0 warnings"], str(steps[0]["stdout"])) == [
        "…: 0 errors, 0 warnings"
    ]


@pytest.mark.parametrize("page", TUTORIALS, ids=lambda page: page.stem)
def test_the_tutorials_here_blocks_run_as_written(page: Path, tmp_path: Path) -> None:
    """The pages' blocks that need no engine: the cluster files, plans and lint."""
    if page.stem == "local":
        pytest.skip("needs the engine: test_the_local_tutorial_runs_as_written")
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    wrong = run_here(page, tmp_path)
    assert not wrong, "\n".join(wrong)
