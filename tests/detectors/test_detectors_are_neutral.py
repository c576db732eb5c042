"""The pure reply checks sit below everything that uses them: detectors/ imports no other stage,
and neither bench, the gateway nor the client imports guards (they share detectors/ instead)."""

from __future__ import annotations

import pytest

from tests.module_imports import file_calls, forbidden, imported_modules, package_sources

STAGES = tuple(
    f"sparkrig.{stage}"
    for stage in (
        "cli",
        "config",
        "fabric",
        "engines",
        "launch",
        "client",
        "guards",
        "bench",
        "gateway",
        "doctor",
        "report",
        "lint",
        "embedded",
        "demo",
    )
)


@pytest.mark.parametrize("module", sorted(package_sources("detectors")))
def test_a_detector_module_imports_no_stage_and_touches_no_file(module: str) -> None:
    source = package_sources("detectors")[module]
    assert forbidden(imported_modules(source), STAGES) == set()
    assert file_calls(source) == set()


@pytest.mark.parametrize("package", ["bench", "gateway", "client"])
def test_bench_gateway_and_client_import_no_guard(package: str) -> None:
    importing = {
        module
        for module, source in package_sources(package).items()
        if forbidden(imported_modules(source), ("sparkrig.guards",))
    }
    assert importing == set()


def test_the_check_catches_a_guard_import() -> None:
    source = "def f():\n    from sparkrig.guards.structured import schema_problems\n"
    assert forbidden(imported_modules(source), ("sparkrig.guards",)) == {
        "sparkrig.guards.structured"
    }
