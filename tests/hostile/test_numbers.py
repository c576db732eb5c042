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

# a [profile] value -> what the one line must say besides the field's name
PROFILE_VALUES: dict[str, tuple[str, str, str]] = {
    "pool-1e400": ("kv_pool_tokens", "1e400", "not finite"),
    "pool-10-to-400": ("kv_pool_tokens", str(10**400), "too large"),
    "pool-huge-exponent": ("kv_pool_tokens", "1e99999", "not finite"),
    "pool-nan": ("kv_pool_tokens", "nan", "not finite"),
    "pool-inf": ("kv_pool_tokens", "inf", "not finite"),
    "pool-minus-inf": ("kv_pool_tokens", "-inf", "not finite"),
    "pool-negative": ("kv_pool_tokens", "-5", "greater than or equal to 1"),
    "seqs-10-to-400": ("max_num_seqs", str(10**400), "too large"),
    "length-10-to-400": ("max_model_len", str(10**400), "too large"),
    "memory-nan": ("gpu_memory_utilization", "nan", "not finite"),
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
    key, value, says = PROFILE_VALUES[case]
    path = with_profile_value(key, value, tmp_path / "cluster.toml")

    line = one_line_failure(run_cli(command, str(path)), f"profile.{key}", says)

    assert "line " in line  # the line of the file, so the user finds the value


def test_a_nan_generation_override_is_one_line(tmp_path: Path) -> None:
    path = with_profile_value("generation_overrides", "{ temperature = nan }", tmp_path / "c.toml")
    one_line_failure(run_cli("plan-capacity", str(path)), "generation_overrides.temperature")


# --- gateway serve --config: the same check as a cluster file ----------------------------------

# a [gateway] line -> what the one line must say besides the field's name
GATEWAY_VALUES: dict[str, tuple[str, str]] = {
    "drain_s = inf": ("gateway.drain_s", "not finite"),
    "drain_s = nan": ("gateway.drain_s", "not finite"),
    "drain_s = 1e400": ("gateway.drain_s", "not finite"),
    "drain_s = 7200": ("drain_s", "less than or equal to 3600"),
    f"stretch_first = {10**400}": ("gateway.stretch_first", "too large"),
    f"stretch_first = {2**60}": ("stretch_first", "less than or equal to"),
    "stretch = -inf": ("gateway.stretch", "not finite"),
    "port = 1e400": ("gateway.port", "not finite"),
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
