"""docs/launch.md stays true: it shows the exact commands the examples render to, and lists
every lint rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkrig.config import load_cluster
from sparkrig.launch.cluster_plan import plan_launch
from sparkrig.lint import rules

ROOT = Path(__file__).parent.parent.parent
DOC = (ROOT / "docs" / "launch.md").read_text()


@pytest.mark.parametrize(
    "example",
    ["examples/pair-vllm.toml", "examples/ring4-vllm.toml", "examples/pair-vllm-container.toml"],
)
def test_doc_shows_the_exact_commands_of_the_example(example: str) -> None:
    plan = plan_launch(load_cluster(ROOT / example), local_state_dir=Path("/state"))
    for process in plan.processes:
        assert process.shell_line() in DOC, f"{example}: {process.key} differs from the doc"


@pytest.mark.parametrize(
    "example",
    ["examples/pair-vllm.toml", "examples/ring4-vllm.toml", "examples/pair-vllm-container.toml"],
)
def test_the_plan_shows_each_command_one_option_a_line_and_the_same_words(example: str) -> None:
    """`up` prints the command to read and paste: one variable or option a line, not one line
    of 1,400 characters, and the very words of the one-line form."""
    plan = plan_launch(load_cluster(ROOT / example), local_state_dir=Path("/state"))
    for process in plan.processes:
        lines = process.shell_lines()
        assert all(line.endswith(" \\") for line in lines[:-1])
        assert " ".join(line.removesuffix(" \\") for line in lines) == process.shell_line()
        longest = max(lines, key=len)
        assert len(longest) < 200 or longest.startswith("--volume"), longest


def test_doc_lists_every_lint_rule() -> None:
    for entry in rules():
        assert f"`{entry.name}`" in DOC
