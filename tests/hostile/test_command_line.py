"""Hostile command lines: numbers out of range, missing or unknown options, contradictions.
Every one fails before any work, in one line naming the option and its range."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.hostile.conftest import one_line_failure, run_cli

EXAMPLES = Path(__file__).parents[2] / "examples"
PAIR = str(EXAMPLES / "pair.toml")
URL = "http://127.0.0.1:9"  # never contacted: each case fails while parsing

OUT_OF_RANGE = [
    (["bench", URL, "--precision", "0"], "--precision"),
    (["bench", URL, "--precision", "1"], "--precision"),
    (["bench", URL, "--precision", "-0.1"], "--precision"),
    (["bench", URL, "--precision", "nan"], "--precision"),
    (["bench", URL, "--precision", "inf"], "--precision"),
    (["bench", URL, "--max-samples", "1"], "--max-samples"),
    (["bench", URL, "--max-samples", "-4"], "--max-samples"),
    (["bench", URL, "--tokens", "0"], "--tokens"),
    (["bench", URL, "--tokens", "7"], "--tokens"),
    (["bench", URL, "--rounds", "0"], "--rounds"),
    (["bench", URL, "--client-processes", "0"], "--client-processes"),
    (["bench", URL, "--max-error-rate", "1.5"], "--max-error-rate"),
    (["bench", URL, "--max-error-rate", "-0.01"], "--max-error-rate"),
    (["bench", "--local", "--slots", "0"], "--slots"),
    (["bench", URL, "--suite", "multiturn", "--turns", "1"], "--turns"),
    (["bench", URL, "--suite", "multiturn", "--conversations", "0"], "--conversations"),
    (["bench", URL, "--opening-tokens", "3"], "--opening-tokens"),
    (["compare", "a.json", "b.json", "--tolerance", "-1"], "--tolerance"),
    (["check", URL, "--kv-block-tokens", "1"], "--kv-block-tokens"),
    (["check", URL, "--kv-block-tokens", "-16"], "--kv-block-tokens"),
    (["check", URL, "--needle-cap", "10"], "--needle-cap"),
    (["check", URL, "--repeat-every", "-1"], "--repeat-every"),
    (["check", URL, "--repeat-every", "0"], "--repeat-every"),
    (["ask", URL, "hi", "--max-tokens", "0"], "--max-tokens"),
    (["ask", URL, "hi", "--max-tokens", "-5"], "--max-tokens"),
    (["up", "--local", "--port", "99999"], "--port"),
    (["up", "--local", "--port", "0"], "--port"),
    (["up", "--local", "--port", "-1"], "--port"),
    (["up", "--local", "--slots", "0"], "--slots"),
    (["up", "--local", "--ctx", "16"], "--ctx"),
    (["up", "--local", "--threads", "0"], "--threads"),
    (["up", "--local", "--spec-draft-max", "0"], "--spec-draft-max"),
    (["up", "--local", "--ready-timeout", "0"], "--ready-timeout"),
    (["up", "--local", "--ready-timeout", "-3"], "--ready-timeout"),
    (["logs", "-n", "-5"], "--lines"),
    (["logs", "-n", "0"], "--lines"),
    (["plan-capacity", PAIR, "--steps-per-second", "-5"], "--steps-per-second"),
    (["plan-capacity", PAIR, "--steps-per-second", "0"], "--steps-per-second"),
    (["gateway", URL, "--after", "-1"], "--after"),
    (["gateway", URL, "--port", "70000"], "--port"),
    (["gateway", URL, "--port", "-2"], "--port"),
    (["gateway", URL, "--reasoning-chars", "0"], "--reasoning-chars"),
    (["gateway", URL, "--long-prompt-chars", "-1"], "--long-prompt-chars"),
    (["soak", URL, "--concurrency", "100000000"], "--concurrency"),
    (["soak", URL, "--duration", "1e300"], "--duration"),
    (["soak", URL, "--window", "1e300"], "--window"),
    (["soak", URL, "--idle-gap", "1e300"], "--idle-gap"),
    (["bench", URL, "--tokens", "99999999999"], "--tokens"),
    (["ask", URL, "hi", "--max-tokens", "99999999999"], "--max-tokens"),
    (["up", "--local", "--ready-timeout", "1e300"], "--ready-timeout"),
    (["stall", URL, "--window", "1e300"], "--window"),
    (["fabric", "test", PAIR, "--liveness", "1e300"], "--liveness"),
    (["fabric", "plan", PAIR, "--tp", "0"], "--tp"),
    (["fabric", "plan", PAIR, "--tp", "-1"], "--tp"),
    (["fabric", "apply", PAIR, "--tp", "0"], "--tp"),
]


@pytest.mark.parametrize(
    ("args", "option"), OUT_OF_RANGE, ids=lambda v: " ".join(v) if isinstance(v, list) else v
)
def test_a_number_out_of_range_is_refused_before_any_work(args: list[str], option: str) -> None:
    line = one_line_failure(run_cli(*args), option, "--help")
    assert "use" in line  # the range it accepts


NOT_NUMBERS = [
    ["bench", URL, "--tokens", "many"],
    ["bench", URL, "--precision", "high"],
    ["up", "--local", "--port", "http"],
    ["logs", "-n", "ten"],
    ["ask", URL, "hi", "--max-tokens", "1e3"],
    ["gateway", URL, "--after", "2.5"],
]


@pytest.mark.parametrize("args", NOT_NUMBERS, ids=" ".join)
def test_a_word_where_a_number_belongs_is_one_line(args: list[str]) -> None:
    one_line_failure(run_cli(*args), "Invalid value", "--help")


USAGE = [
    (["bench", URL, "--nope"], "--nope"),
    (["check", URL, "--quikc"], "--quikc"),
    (["ask", URL], "prompt"),
    (["ask"], "url"),
    (["compare", "only-one.json"], "after"),
    (["lint"], "cluster_file"),
    (["fabric", "gids", PAIR], "--node"),
    (["fabric", "nosuch"], "nosuch"),
    (["nosuch"], "nosuch"),
    (["bench", URL, "--tokens"], "--tokens"),
]


@pytest.mark.parametrize(
    ("args", "names"), USAGE, ids=lambda v: " ".join(v) if isinstance(v, list) else v
)
def test_a_usage_error_is_one_line_not_a_box(args: list[str], names: str) -> None:
    outcome = run_cli(*args)
    one_line_failure(outcome, names, "--help")
    assert "╭" not in outcome.stderr


CONTRADICTIONS = [
    (["bench"], "--local"),
    (["bench", URL, "--local"], "--local"),
    (["check"], "--local"),
    (["check", URL, "--quick", "--full"], "--quick"),
    (["bench", URL, "--spec-type", "draft-simple"], "--local"),
    (["bench", URL, "--suite", "speed"], "speed"),
    (["bench", URL, "--suite", ","], "suite"),
    (["bench", URL, "--concurrency", "1,x"], "--concurrency"),
    (["bench", URL, "--concurrency", "0"], "--concurrency"),
    (["bench", URL, "--prefill-depths", "-8"], "--prefill-depths"),
    (["bench", URL, "--prefill-depths", "128,1000000000"], "--prefill-depths"),
    (["bench", URL, "--concurrency", "1,100000"], "--concurrency"),
    (["bench", URL, "--concurrency", "99999999999999999999999"], "--concurrency"),
    (["bench", URL, "--slo", "ttft=2s"], "METRIC_pN=LIMIT"),
    (["bench", URL, "--slo", "ttft_p99=2"], "unit"),
    (["bench", URL, "--slo", "ttft_p98=2s"], "p98"),
    (["bench", URL, "--slo", "latency_p99=2s"], "latency"),
    (["bench", URL, "--slo", "ttft_p99=0ms"], "above 0"),
    (["bench", URL, "--slo", "ttft_p99=nans"], "ttft_p99=nans"),
    (["bench", URL, "--slo", "tpot_p99=50ms,itl_p50=40ms"], "twice"),
    (["bench", URL, "--slo", "ttft_p99=2s,"], "empty"),
    (["bench", URL, "--find-max-load"], "--slo"),
    (["bench", URL, "--find-max-load", "--slo", "ttft_p99=2s", "--suite", "decode"], "--suite"),
    (["bench", URL, "--find-max-load", "--slo", "ttft_p99=2s", "--rounds", "3"], "--rounds"),
    (["bench", URL, "--find-max-load", "--slo", "ttft_p99=2s", "--paired-with", URL], "paired"),
    (["bench", URL, "--suite", "max-load"], "--find-max-load"),
    (["bench", URL, "--arrivals", "uniform:2"], "poisson:RATE"),
    (["bench", URL, "--arrivals", "poisson:0"], "above 0"),
    (["bench", URL, "--arrivals", "poisson:fast"], "RATE"),
    (["bench", URL, "--arrivals", "poisson:2:-1"], "SEED"),
    (["bench", URL, "--arrivals", "poisson:2", "--suite", "decode"], "concurrency"),
    (["bench", URL, "--prefill-text", "lorem"], "--prefill-text"),
    (["check", URL, "--guard", "nosuch"], "nosuch"),
    (["up"], "--local"),
    (["up", PAIR, "--local"], "--local"),
    (["up", "--local", "--spec-type", "warp"], "--spec-type"),
    (["up", "--local", "--spec-synth-rates", "0.5"], "--spec-type"),
    (["up", "--local", "--spec-type", "draft-simple", "--spec-synth-rates", "a,b"], "rates"),
    (["fabric", "apply", PAIR, "--apply", "--restore"], "--restore"),
    (["fabric", "apply", PAIR, "--executor", "telnet"], "telnet"),
    (["fabric", "apply", PAIR, "--executor", "netns", "--netns", "bad"], "--netns"),
    (["fabric", "discover", PAIR, "--executor", "local"], "ssh"),
    (["gateway", URL, "--inject", "nosuch"], "nosuch"),
]


@pytest.mark.parametrize(
    ("args", "names"), CONTRADICTIONS, ids=lambda v: " ".join(v) if isinstance(v, list) else v
)
def test_a_contradiction_is_one_line_with_the_fix(args: list[str], names: str, state: Path) -> None:
    one_line_failure(run_cli(*args), names)


def test_version_alone_prints_the_version() -> None:
    outcome = run_cli("--version")
    assert outcome.code == 0
    assert outcome.stdout.strip()[0].isdigit()


def test_debug_shows_the_traceback_instead() -> None:
    outcome = run_cli("--debug", "ask", "localhost:8080", "hi")
    assert outcome.code != 0
    assert outcome.exception is not None
    assert not isinstance(outcome.exception, SystemExit)


PAIR_VLLM = str(EXAMPLES / "pair-vllm.toml")
RING4 = str(EXAMPLES / "ring4.toml")

CLUSTER_COMMANDS = [
    (["lint", PAIR, "--profile", "nosuch"], "nosuch"),
    (["plan-capacity", PAIR_VLLM, "--profile", "nosuch"], "nosuch"),
    (["up", PAIR], "[engine]"),
    (["up", PAIR_VLLM, "--profile", "nosuch"], "nosuch"),
    (["logs", PAIR, "spark1"], "nothing recorded"),
    (["fabric", "apply", PAIR, "--node", "nosuch"], "nosuch"),
    (["fabric", "gids", PAIR, "--node", "nosuch"], "nosuch"),
    (["fabric", "plan", PAIR, "--tp", "3"], "tensor_parallel_size"),
    (["fabric", "plan", RING4, "--tp", "3"], "closed"),
    (["fabric", "plan", PAIR, "--out", "/proc/no-such-folder"], "--out"),
    (["fabric", "discover", PAIR, "--executor", "netns", "--netns-prefix", "zz-nosuch-"], "zz-"),
    (["logs", "--name", "nosuch"], "nosuch"),
    (["down", "--name", "nosuch", "--apply"], "nosuch"),
    (["logs"], "nothing is running"),
    (["down"], "nothing is running"),
]


@pytest.mark.parametrize(
    ("args", "names"), CLUSTER_COMMANDS, ids=lambda v: " ".join(v) if isinstance(v, list) else v
)
def test_every_command_names_what_is_wrong(args: list[str], names: str, state: Path) -> None:
    one_line_failure(run_cli(*args), names)
