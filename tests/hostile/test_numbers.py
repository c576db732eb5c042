"""Hostile numbers (docs/errors.md, class 9): a number read from a cluster file, sysfs, /metrics
or a server that overflows, is NaN or infinite, is written in non-ASCII digits, is a negative
count, or is a counter that went backwards. Each is one line naming the cause and the fix, or,
where the reader already reads an unusable value as absent (a GID table), exactly that."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sparkrig.cli.views.smoke_table import metrics_line
from sparkrig.client.metrics import metrics_delta, parse_metrics
from sparkrig.engines.metric_map import Quantity
from tests.hostile.conftest import one_line_failure, run_cli
from tests.hostile.fake_server import HOSTILE_METRICS, FakeServer

EXAMPLES = Path(__file__).parents[2] / "examples"
PAIR_VLLM = EXAMPLES / "pair-vllm.toml"
DOCTOR = Path(__file__).parents[1] / "fixtures" / "doctor"

# a [profile] value -> (key, value, why, the field's own range): the line shows the value as
# the file writes it (1e400, which tomllib reads as inf) and the range the field declares
PROFILE_VALUES: dict[str, tuple[str, str, str, str]] = {
    "pool-1e400": ("kv_pool_tokens", "1e400", "not finite", "a whole number of 1 or more"),
    "pool-10-to-400": ("kv_pool_tokens", str(10**400), "too large", "whole number of 1 or more"),
    "pool-huge-exponent": ("kv_pool_tokens", "1e99999", "not finite", "of 1 or more"),
    "pool-nan": ("kv_pool_tokens", "nan", "not finite", "a whole number of 1 or more"),
    "pool-inf": ("kv_pool_tokens", "inf", "not finite", "a whole number of 1 or more"),
    "pool-minus-inf": ("kv_pool_tokens", "-inf", "not finite", "a whole number of 1 or more"),
    "pool-negative": ("kv_pool_tokens", "-5", "out of range", "a whole number of 1 or more"),
    "pool-half": ("kv_pool_tokens", "2.5", "not whole", "a whole number of 1 or more"),
    "seqs-10-to-400": ("max_num_seqs", str(10**400), "too large", "of 1 or more"),
    "length-10-to-400": ("max_model_len", str(10**400), "too large", "of 1 or more"),
    "memory-nan": ("gpu_memory_utilization", "nan", "not finite", "above 0 and at most 1"),
    "memory-zero": ("gpu_memory_utilization", "0", "out of range", "above 0 and at most 1"),
    "memory-1e400": ("gpu_memory_utilization", "+1e400", "not finite", "above 0 and at most 1"),
}


def with_profile_value(key: str, value: str, path: Path) -> Path:
    lines = [line for line in PAIR_VLLM.read_text().splitlines() if not line.startswith(f"{key} =")]
    at = lines.index("[profile]") + 1
    lines.insert(at, f"{key} = {value}")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("command", ["plan-capacity", "lint"])
@pytest.mark.parametrize("case", list(PROFILE_VALUES))
def test_a_hostile_number_in_a_cluster_file_is_one_line(
    case: str, command: str, tmp_path: Path
) -> None:
    key, value, why, expected = PROFILE_VALUES[case]
    path = with_profile_value(key, value, tmp_path / "cluster.toml")

    line = one_line_failure(run_cli(command, str(path)), f"profile.{key}", why, expected)

    assert "line " in line  # the line of the file, so the user finds the value
    assert f"is '{value[:40]}" in line  # as written, never tomllib's reading of it ('inf')


def test_a_nan_generation_override_is_one_line(tmp_path: Path) -> None:
    path = with_profile_value("generation_overrides", "{ temperature = nan }", tmp_path / "c.toml")
    one_line_failure(run_cli("plan-capacity", str(path)), "generation_overrides.temperature")


# --- gateway serve --config: the same check as a cluster file ----------------------------------

# a [gateway] line -> what the one line must say besides the field's name
GATEWAY_VALUES: dict[str, tuple[str, str]] = {
    "drain_s = inf": ("gateway.drain_s", "not finite"),
    "drain_s = nan": ("gateway.drain_s", "not finite"),
    "drain_s = 1e400": ("gateway.drain_s", "not finite"),
    "drain_s = 7200": ("gateway.drain_s is '7200'", "a number from 0 to 3600"),
    f"stretch_first = {10**400}": ("gateway.stretch_first", "too large"),
    f"stretch_first = {2**60}": ("gateway.stretch_first", f"from 0 to {2**53}"),
    "stretch = -inf": ("gateway.stretch is '-inf'", "a number from 0 to 9"),
    "port = 1e400": ("gateway.port is '1e400'", "a whole number from 0 to 65535"),
}


@pytest.mark.parametrize("setting", list(GATEWAY_VALUES))
def test_a_hostile_number_in_a_gateway_settings_file_is_one_line(
    setting: str, tmp_path: Path
) -> None:
    path = tmp_path / "gateway.toml"
    path.write_text(f'[gateway]\nhost = "127.0.0.1"\n{setting}\n')

    outcome = run_cli("gateway", "serve", "http://127.0.0.1:9", "--config", str(path))

    assert outcome.code == 2
    one_line_failure(outcome, "gateway.toml", *GATEWAY_VALUES[setting])


# --- sysfs: GID entries named in digits int() refuses or trusts are named, never an index -----

ADDRESS_GID = "0000:0000:0000:0000:0000:ffff:0a14:0001\n"  # spark1's 10.20.0.1, IPv4-mapped


def gid_port(root: Path) -> Path:
    """spark1's rocep1s0f0 port 1 with one valid entry: index 5 holds its address as RoCE v2."""
    port = root / "class" / "infiniband" / "rocep1s0f0" / "ports" / "1"
    for folder in ("gids", "gid_attrs/types", "gid_attrs/ndevs"):
        (port / folder).mkdir(parents=True)
    (port / "gids" / "5").write_text(ADDRESS_GID)
    (port / "gid_attrs" / "types" / "5").write_text("RoCE v2\n")
    return port


def spark1_gid_row(root: Path) -> dict[str, object]:
    args = ["fabric", "gids", str(EXAMPLES / "pair.toml"), "--node", "spark1", "--json"]
    outcome = run_cli(*args, "--sysfs", str(root))
    assert outcome.code == 1  # spark1's second device, roceP2p1s0f0, has no table here
    assert "Traceback" not in outcome.stdout + outcome.stderr
    rows = {row["device"]: row for row in json.loads(outcome.stdout)}
    return dict(rows["rocep1s0f0"])


@pytest.mark.parametrize("name", ["²", "٣", "１", "-1", "9" * 200])
def test_a_gid_entry_not_named_in_ascii_digits_is_named_and_never_an_index(
    name: str, tmp_path: Path
) -> None:
    """The odd entry holds the same address as RoCE v2: a parser that trusted `isdigit()` and
    `int()` would read `٣` as 3, `１` as 1 and the 200 nines as an index, and answer two
    candidates; one that dropped `-1` or `²` silently would not name them."""
    port = gid_port(tmp_path / "sys")
    (port / "gids" / name).write_text(ADDRESS_GID)
    (port / "gid_attrs" / "types" / name).write_text("RoCE v2\n")

    row = spark1_gid_row(tmp_path / "sys")

    assert (row["index"], row["candidates"]) == (5, [5])  # the valid entry still resolves
    problem = str(row["problem"])
    assert f"gids/{name[:16]}" in problem
    assert "its name is not a GID index" in problem
    assert " — " in problem


# a file of the valid entry -> its content, and what the answer must name instead of the
# misleading "has no GID table" or "only as RoCE v1"
GID_CONTENT: dict[str, tuple[str, str, str]] = {
    "gid-superscript": ("gids/5", "²\n", "gids/5 (not ASCII text)"),
    "gid-arabic-digit": ("gids/5", "٣\n", "gids/5 (not ASCII text)"),
    "gid-not-an-address": ("gids/5", "0000:²\n", "gids/5 (not ASCII text)"),
    "gid-garbage": ("gids/5", "12345\n", "gids/5 (holds '12345', not a GID)"),
    "type-superscript": ("gid_attrs/types/5", "²\n", "no GID type, neither RoCE v2 nor v1"),
    "type-odd": ("gid_attrs/types/5", "RoCE v9\n", "GID type 'RoCE v9', neither RoCE v2 nor v1"),
}


@pytest.mark.parametrize("case", list(GID_CONTENT))
def test_an_unreadable_gid_file_is_named(case: str, tmp_path: Path) -> None:
    entry, content, says = GID_CONTENT[case]
    port = gid_port(tmp_path / "sys")
    (port / entry).write_text(content)

    row = spark1_gid_row(tmp_path / "sys")

    assert row["index"] is None
    problem = str(row["problem"])
    assert says in problem
    assert " — " in problem
    assert "has no GID table" not in problem
    assert "only as RoCE v1" not in problem
    if case == "type-superscript":
        assert "types/5 (not ASCII text)" in problem


def test_doctor_names_a_gid_entry_not_named_in_ascii_digits(tmp_path: Path) -> None:
    """pair-clean with spark1's RoCE v2 entry renamed from 3 to ٣ (Arabic-Indic three)."""
    copy = tmp_path / "pair"
    shutil.copytree(DOCTOR / "pair-clean", copy)
    sysfs = copy / "spark1" / "ib_sysfs.out"
    text = sysfs.read_text()
    for folder in ("gids", "gid_attrs/types", "gid_attrs/ndevs"):
        text = text.replace(f"rocep1s0f0/ports/1/{folder}/3:", f"rocep1s0f0/ports/1/{folder}/٣:")
    sysfs.write_text(text)

    outcome = run_cli("doctor", str(copy / "cluster.toml"), "--load", str(copy), "--json")

    assert outcome.code == 1, outcome.stderr
    found = [f for f in json.loads(outcome.stdout)["findings"] if f["check"] == "gid-index"]
    assert [f["node"] for f in found] == ["spark1"]
    assert "only as RoCE v1 (index 2)" in found[0]["seen"]  # what the readable entries hold
    assert "gids/٣ (its name is not a GID index)" in found[0]["seen"]


# --- /metrics and /v1/models -----------------------------------------------------------------


@pytest.mark.parametrize("scenario", list(HOSTILE_METRICS))
def test_a_hostile_counter_in_metrics_is_one_line(scenario: str, fake: FakeServer) -> None:
    _, says = HOSTILE_METRICS[scenario]
    one_line_failure(run_cli("metrics", fake.url(f"metrics-{scenario}")), says)


def test_a_model_list_that_is_not_utf8_says_so(fake: FakeServer) -> None:
    line = one_line_failure(run_cli("ask", fake.url("models-not-utf8"), "hi"), "not UTF-8")
    assert "0xff" in line
    assert "did not answer JSON" not in line


BENCH = [
    *("--suite", "decode", "--max-samples", "2", "--rounds", "1", "--tokens", "16"),
    "--no-telemetry",
]


def test_a_bench_sample_whose_counter_went_backwards_is_discarded_and_named(
    fake: FakeServer, tmp_path: Path, state: Path
) -> None:
    """The same counted replies against a /metrics whose generation counter goes down at every
    scrape (a restart) and one that counts what it served: each backwards sample is discarded
    with the counter named, never a negative rate, and nothing measured is not exit 0; the
    counting server's samples are kept."""
    out = tmp_path / "restarting.json"
    outcome = run_cli("bench", fake.url("counter-backwards"), *BENCH, "--out", str(out))

    one_line_failure(
        outcome,
        "nothing was measured: every sample was discarded (first: server restarted: "
        "vllm:generation_tokens_total went backwards",
        progress=True,
    )
    point = json.loads(out.read_text())["points"][0]  # the first point stops the bench
    assert point["samples"] == []
    assert point["discarded"]
    for discarded in point["discarded"]:
        assert discarded["reason"].startswith(
            "server restarted: vllm:generation_tokens_total went backwards"
        )

    clean = tmp_path / "counting.json"
    kept = run_cli("bench", fake.url("counter-counts"), *BENCH, "--out", str(clean))
    assert kept.code == 0, kept.stderr
    for point in json.loads(clean.read_text())["points"]:
        assert point["samples"]
        assert point["discarded"] == []
        assert all(s["metrics"]["values"]["generated_tokens"] == 12 for s in point["samples"])


COUNTER = "# TYPE vllm:generation_tokens counter\nvllm:generation_tokens_total {}\n"


def test_a_counter_that_goes_backwards_is_a_named_restart_not_a_negative_rate() -> None:
    before = parse_metrics(COUNTER.format(500), taken_ns=0)
    after = parse_metrics(COUNTER.format(20), taken_ns=1_000_000_000)

    delta = metrics_delta(before, after)

    assert delta.server_restarted
    assert delta.counters_backwards == ["vllm:generation_tokens_total"]
    assert delta.values[Quantity.GENERATED_TOKENS] is None  # never 20 - 500
    assert "went backwards" in metrics_line(delta)
