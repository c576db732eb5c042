"""Hostile numbers (docs/errors.md, class 9): a number read from a cluster file, sysfs, /metrics
or a server that overflows, is NaN or infinite, is written in non-ASCII digits, is a negative
count, or is a counter that went backwards. Each is one line naming the cause and the fix, or,
where the reader already reads an unusable value as absent (a GID table), exactly that."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparkrig.cli.views.smoke_table import metrics_line
from sparkrig.client.metrics import metrics_delta, parse_metrics
from sparkrig.engines.metric_map import Quantity
from tests.hostile.conftest import one_line_failure, run_cli
from tests.hostile.fake_server import HOSTILE_METRICS, FakeServer

EXAMPLES = Path(__file__).parents[2] / "examples"
PAIR_VLLM = EXAMPLES / "pair-vllm.toml"

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


# --- sysfs: GID entries named in digits int() refuses or trusts read as "no GID" ---------------

ADDRESS_GID = "0000:0000:0000:0000:0000:ffff:c0a8:6401\n"  # spark1's fabric address, mapped


@pytest.mark.parametrize("name", ["²", "٣", "１", "-1", "9" * 200])
def test_a_gid_entry_not_named_in_ascii_digits_is_no_gid(name: str, tmp_path: Path) -> None:
    port = tmp_path / "sys" / "class" / "infiniband" / "rocep1s0f0" / "ports" / "1"
    for folder in ("gids", "gid_attrs/types", "gid_attrs/ndevs"):
        (port / folder).mkdir(parents=True)
    (port / "gids" / name).write_text(ADDRESS_GID)
    (port / "gid_attrs" / "types" / name).write_text("RoCE v2\n")
    args = ["fabric", "gids", str(EXAMPLES / "pair.toml"), "--node", "spark1", "--json"]

    outcome = run_cli(*args, "--sysfs", str(tmp_path / "sys"))

    assert outcome.code == 1
    assert "Traceback" not in outcome.stdout + outcome.stderr
    rows = json.loads(outcome.stdout)
    assert all(row["index"] is None and " — " in row["problem"] for row in rows)


# --- /metrics and /v1/models -----------------------------------------------------------------


@pytest.mark.parametrize("scenario", list(HOSTILE_METRICS))
def test_a_hostile_counter_in_metrics_is_one_line(scenario: str, fake: FakeServer) -> None:
    _, says = HOSTILE_METRICS[scenario]
    one_line_failure(run_cli("metrics", fake.url(f"metrics-{scenario}")), says)


def test_a_model_list_that_is_not_utf8_says_so(fake: FakeServer) -> None:
    line = one_line_failure(run_cli("ask", fake.url("models-not-utf8"), "hi"), "not UTF-8")
    assert "0xff" in line
    assert "did not answer JSON" not in line


COUNTER = "# TYPE vllm:generation_tokens counter\nvllm:generation_tokens_total {}\n"


def test_a_counter_that_goes_backwards_is_a_named_restart_not_a_negative_rate() -> None:
    before = parse_metrics(COUNTER.format(500), taken_ns=0)
    after = parse_metrics(COUNTER.format(20), taken_ns=1_000_000_000)

    delta = metrics_delta(before, after)

    assert delta.server_restarted
    assert delta.counters_backwards == ["vllm:generation_tokens_total"]
    assert delta.values[Quantity.GENERATED_TOKENS] is None  # never 20 - 500
    assert "went backwards" in metrics_line(delta)
