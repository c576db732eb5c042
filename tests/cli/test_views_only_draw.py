"""cli/views/ draws: a view runs no import of what builds, starts, fetches or reads files, and
calls no file operation. The command that shows a view does the work and hands the view data."""

from __future__ import annotations

import pytest

from tests.module_imports import file_calls, forbidden, package_sources, runtime_imports

ACTIONS = (
    "aiohttp",
    "asyncio",
    "subprocess",
    "sparkrig.json_files",
    "sparkrig.client.endpoint",
    "sparkrig.launch.lifecycle",
    "sparkrig.launch.executors",
    "sparkrig.launch.local",
    "sparkrig.engines.llamacpp.build",
    "sparkrig.engines.llamacpp.source_build",
)
VIEWS = package_sources("cli/views")


def problems(source: str) -> set[str]:
    return forbidden(runtime_imports(source), ACTIONS) | file_calls(source)


@pytest.mark.parametrize("module", sorted(VIEWS))
def test_a_view_only_draws(module: str) -> None:
    assert problems(VIEWS[module]) == set()


def test_the_check_catches_an_action_and_spares_a_type_only_import() -> None:
    acting = "from sparkrig.engines.llamacpp.build import install\n"
    typed = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    " + acting
    assert problems(acting) == {"sparkrig.engines.llamacpp.build"}
    assert problems(typed) == set()
