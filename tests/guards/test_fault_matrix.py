"""Every guard FAILS on its fault and PASSES on the clean engine: the real llama-server behind
the fault-injecting gateway, driven by the table in docs/contributing/guards-evidence.md."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sparkrig import defaults
from sparkrig.engines.llamacpp.build import EngineInstall
from sparkrig.gateway import GatewayConfig, parse_faults, running_gateway
from sparkrig.guards.battery import GUARD_NAMES, run_battery
from sparkrig.guards.context import CheckSettings
from sparkrig.guards.identity import load_previous_receipt
from sparkrig.guards.verdict import GuardResult
from sparkrig.launch.local import LocalInstance
from tests.own_server import own_llama_server

pytestmark = pytest.mark.engine

DOCS = Path(__file__).parents[2] / "docs" / "contributing" / "guards-evidence.md"
# the session server has 1,024 tokens per slot: blocks of 128 keep 3 documents well inside it
SETTINGS = CheckSettings(kv_block_tokens=128)
# the baseline run's receipt: the earlier build that a row running `against` is compared with
EARLIER_RECEIPT = "record.json"


def matrix_rows() -> list[tuple[str, str, list[str], list[str]]]:
    text = DOCS.read_text()
    table = text.split("<!-- fault-matrix:start -->")[1].split("<!-- fault-matrix:end -->")[0]
    rows = []
    for line in table.strip().splitlines()[2:]:
        fault, settings, run, must_fail = (cell.strip() for cell in line.strip("|").split("|"))
        guards = list(GUARD_NAMES) if run == "all" else run.split(",")
        rows.append((fault, settings, guards, [] if must_fail == "none" else must_fail.split(",")))
    return rows


def gateway_config(fault: str, settings: str) -> GatewayConfig:
    config = GatewayConfig(faults=[] if fault == "none" else parse_faults(fault))
    for setting in filter(None, (part.strip() for part in settings.split(","))):
        if setting == "emulate-reasoning":
            config.emulate_reasoning = True
        elif match := re.fullmatch(r"after=(\d+)", setting):
            config.after_requests = int(match.group(1))
        elif match := re.fullmatch(r"long-prompt-chars=(\d+)", setting):
            config.long_prompt_chars = int(match.group(1))
        elif match := re.fullmatch(r"full-at=(\d+)", setting):
            config.full_at_requests = int(match.group(1))
        elif match := re.fullmatch(r"wrong-share=([\d.]+)", setting):
            config.wrong_share = float(match.group(1))
        else:
            raise AssertionError(f"{DOCS.name}: unknown gateway setting {setting!r}")
    return config


@pytest.fixture(scope="module")
async def baseline(llama_server: LocalInstance, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The capability baseline, recorded straight from the clean engine; kv_integrity keeps the
    score of its reference reads."""
    path = tmp_path_factory.mktemp("baseline") / "baseline.json"
    receipt = await run_battery(
        llama_server.base_url,
        settings=SETTINGS,
        guards=["exact", "kv_integrity", "needle"],
        out_path=path.with_name(EARLIER_RECEIPT),
        baseline_path=path,
        record_baseline=True,
    )
    assert [r.verdict for r in receipt.results] == ["PASS", "PASS", "PASS"]
    return path


def row_id(fault: str, settings: str, guards: list[str], _must_fail: list[str]) -> str:
    """`fault+settings`, and `+against` for a row compared with the earlier receipt."""
    return "+".join(
        [fault, *filter(None, [settings]), *(["against"] if "against" in guards else [])]
    )


def expected_failures(must_fail: list[str]) -> dict[str, str]:
    """`needle(three@)` -> {"needle": "three@"}: the guard must FAIL, with that text in its
    evidence (which part of the guard caught it); a bare name needs any evidence."""
    expected = {}
    for entry in must_fail:
        guard, _, rest = entry.partition("(")
        expected[guard] = rest.removesuffix(")")
    return expected


def test_the_matrix_covers_every_guard_but_the_engine_level_one() -> None:
    failing = {guard for *_, must_fail in matrix_rows() for guard in expected_failures(must_fail)}
    assert failing == set(GUARD_NAMES) - {"acceptance"} | {"against"}  # acceptance: test below


@pytest.mark.parametrize(
    ("fault", "settings", "guards", "must_fail"),
    matrix_rows(),
    ids=[row_id(*row) for row in matrix_rows()],
)
async def test_guard_against_fault(
    llama_server: LocalInstance,
    baseline: Path,
    tmp_path: Path,
    fault: str,
    settings: str,
    guards: list[str],
    must_fail: list[str],
) -> None:
    verdicts, evidence = await assert_row(
        llama_server.base_url, baseline, tmp_path, (fault, settings, guards, must_fail)
    )
    if fault == "none" and not settings and guards == list(GUARD_NAMES):
        # clean: only what this engine cannot show may skip
        skipped = {guard for guard, verdict in verdicts.items() if verdict == "SKIP"}
        assert skipped == {"stop_in_reasoning", "acceptance"}, evidence


async def assert_row(
    base_url: str,
    baseline: Path,
    folder: Path,
    row: tuple[str, str, list[str], list[str]],
) -> tuple[dict[str, str], dict[str, str]]:
    """One row of the matrix on the engine at `base_url`, behind the fault-injecting gateway:
    exactly the guards the row names FAIL, each with its evidence text. Returns every guard's
    verdict and evidence; `against` compares with the baseline run's receipt beside `baseline`."""
    fault, settings, guards, must_fail = row
    against = None
    if "against" in guards:  # `check --against` the clean engine's receipt of the baseline run
        guards = [guard for guard in guards if guard != "against"]
        earlier = baseline.with_name(EARLIER_RECEIPT)
        against = (earlier, load_previous_receipt(earlier))
    async with running_gateway(base_url, gateway_config(fault, settings)) as url:
        receipt = await run_battery(
            url,
            settings=SETTINGS,
            guards=guards,
            out_path=folder / "check.json",
            baseline_path=baseline,
            reraise=True,
            against=against,
        )
    verdicts = {result.guard: result.verdict for result in receipt.results}
    evidence = {result.guard: result.evidence for result in receipt.results}
    failed = sorted(guard for guard, verdict in verdicts.items() if verdict == "FAIL")
    expected = expected_failures(must_fail)
    assert failed == sorted(expected), evidence
    for guard, text in expected.items():
        assert text in evidence[guard], evidence[guard]
    return verdicts, evidence


async def _acceptance(url: str, baseline: Path, out: Path, record: bool = False) -> GuardResult:
    receipt = await run_battery(
        url,
        settings=SETTINGS,
        guards=["acceptance"],
        out_path=out,
        baseline_path=baseline,
        record_baseline=record,
    )
    return receipt.results[0]


async def _acceptance_at_rates(
    engine: EngineInstall, bundled_model: Path, rates: list[float], baseline: Path, out: Path
) -> GuardResult:
    """The canary against a second speculative engine with these synthetic rates."""
    from sparkrig.engines.llamacpp.server import SpeculativeOptions

    options = SpeculativeOptions(spec_type="draft-simple", synth_rates=rates)
    slots = defaults.LOCAL_PARALLEL_SLOTS
    async with own_llama_server(
        engine, bundled_model, parallel_slots=slots, speculative=options
    ) as server:
        return await _acceptance(server.base_url, baseline, out)


async def test_acceptance_canary_fails_when_the_draft_gets_worse(
    spec_server: LocalInstance, engine: EngineInstall, bundled_model: Path, tmp_path: Path
) -> None:
    """The fault is in the engine: a second speculative engine accepts half as often, as a
    broken draft load did (field notes: draft-loader-12-tensors); the text stays right."""
    from tests.conftest import SYNTH_RATES

    path = tmp_path / "baseline.json"
    recorded = await _acceptance(spec_server.base_url, path, tmp_path / "record.json", True)
    assert recorded.verdict == "PASS", recorded.evidence
    same = await _acceptance(spec_server.base_url, path, tmp_path / "same.json")
    assert same.verdict == "PASS", same.evidence
    halved = [r / 2 for r in SYNTH_RATES]
    worse = await _acceptance_at_rates(engine, bundled_model, halved, path, tmp_path / "w.json")
    assert worse.verdict == "FAIL", worse.evidence
    assert "baseline" in worse.evidence


# the mean of these stays within the band of SYNTH_RATES' while position 3 collapses to 0
POSITION_FAULT_RATES = (1.0, 0.95, 0.0, 0.0)


async def test_acceptance_canary_fails_when_one_draft_position_collapses(
    spec_server: LocalInstance, engine: EngineInstall, bundled_model: Path, tmp_path: Path
) -> None:
    """Positions 2–5 at 0.000 while the draft still agrees at position 1 (field notes:
    hash-bursts-acceptance-collapse): the mean over positions holds, a position does not."""
    path = tmp_path / "baseline.json"
    recorded = await _acceptance(spec_server.base_url, path, tmp_path / "record.json", True)
    assert recorded.verdict == "PASS", recorded.evidence
    result = await _acceptance_at_rates(
        engine, bundled_model, list(POSITION_FAULT_RATES), path, tmp_path / "collapsed.json"
    )
    assert result.verdict == "FAIL", result.evidence
    assert "draft position 3" in result.evidence
    assert "mean holds" in result.evidence
