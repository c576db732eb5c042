"""`gateway serve` settings: a TOML file, flags on top, and a bad file refused in one line."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

import pytest

from sparkrig.errors import ConfigError, UsageError
from sparkrig.gateway.serve_config import ServeConfig, load_serve_config
from tests.conftest import SPARKRIG

FULL = """
[gateway]
host = "127.0.0.1"
port = 8081
reasoning = "auto"
reasoning_models = ["qwen3-*", "deepseek-r1*"]
stops_on_content = true
normalise_reasoning = true
reasoning_keys = "reasoning_content"
template_opens_think = false
live_guards = false
guard_log = "guards.jsonl"
workload_log = "workload.jsonl"
record_prompts = false
drain_s = 30
"""


def test_a_file_then_flags(tmp_path: Path) -> None:
    path = tmp_path / "gateway.toml"
    path.write_text(FULL)
    config = load_serve_config(path, {"live_guards": True, "port": None, "drain_s": 5.0})
    assert config.port == 8081  # a flag left unset keeps the file's value
    assert config.live_guards is True  # a flag given wins
    assert config.drain_s == 5.0
    assert config.reasoning_keys == "reasoning_content"
    assert config.workload_log == Path("workload.jsonl")


def test_no_file_is_the_defaults() -> None:
    config = load_serve_config(None, {})
    assert config == ServeConfig()
    assert config.host == "127.0.0.1"


@pytest.mark.parametrize(
    ("body", "model", "expected"),
    [
        ({}, "qwen3-8b", True),
        ({}, "llama-3", False),
        ({"reasoning_effort": "high"}, "llama-3", True),
        ({"chat_template_kwargs": {"enable_thinking": True}}, "llama-3", True),
        ({"chat_template_kwargs": {"enable_thinking": False}}, "qwen3-8b", False),
        ({"reasoning_effort": "none"}, "qwen3-8b", False),
        # the reports' own shapes (field notes: reasoning-families)
        ({"chat_template_kwargs": {"thinking": True}}, "deepseek-v4-flash", True),
        ({"chat_template_kwargs": {"thinking": False}}, "qwen3-8b", False),
        ({"chat_template_kwargs": {"thinking": True, "reasoning_effort": "low"}}, "ds", True),
        ({"chat_template_kwargs": {"reasoning_effort": "low"}}, "deepseek-v4.1-flash", True),
    ],
)
def test_which_requests_are_reasoning_ones(
    body: dict[str, object], model: str, expected: bool
) -> None:
    config = ServeConfig(reasoning_models=["qwen3-*"])
    assert config.is_reasoning_request({"model": model, **body}) is expected
    assert ServeConfig(reasoning="off").is_reasoning_request({"model": model, **body}) is False


@pytest.mark.parametrize(
    ("server", "body", "expected"),
    [
        ({"thinking": True}, {}, True),
        ({"thinking": True}, {"chat_template_kwargs": {"thinking": False}}, False),
        ({"thinking": False}, {}, False),
        ({"thinking": False}, {"reasoning_effort": "low"}, True),
    ],
)
def test_a_request_inherits_thinking_from_the_servers_defaults(
    server: dict[str, bool], body: dict[str, object], expected: bool
) -> None:
    config = ServeConfig(server_chat_template_kwargs=server)
    assert config.is_reasoning_request({"model": "deepseek-v4-flash", **body}) is expected
    assert ServeConfig().is_reasoning_request({"model": "deepseek-v4-flash", **body}) is (
        "reasoning_effort" in body
    )


def test_the_cluster_files_defaults_reach_the_gateway(tmp_path: Path) -> None:
    from sparkrig.cli.gateway_serve import server_kwargs_of

    cluster = tmp_path / "pair.toml"
    cluster.write_text(
        'nodes = [{ name = "a" }]\n'
        "[profile]\ndefault_chat_template_kwargs = { thinking = true }\n"
        "[profiles.chat]\ndefault_chat_template_kwargs = { thinking = false }\n"
    )
    assert server_kwargs_of(cluster, None) == {"thinking": True}
    assert server_kwargs_of(cluster, "chat") == {"thinking": False}
    with pytest.raises(UsageError, match="profile nope is not in"):
        server_kwargs_of(cluster, "nope")
    path = tmp_path / "gateway.toml"
    path.write_text("[gateway]\nserver_chat_template_kwargs = { thinking = true }\n")
    assert load_serve_config(path, {}).is_reasoning_request({"model": "m"})


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--profile", "chat"], "--profile names a profile of --cluster — pass --cluster FILE too"),
        (
            ["--cluster", "/nonexistent/pair.toml"],
            "cluster file /nonexistent/pair.toml does not exist",
        ),
    ],
)
def test_a_bad_cluster_option_is_refused_in_one_line(args: list[str], message: str) -> None:
    result = subprocess.run(
        [SPARKRIG, "gateway", "serve", "http://127.0.0.1:9", *args],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode != 0
    assert message in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('reasoning = "sometimes"', "reasoning: Input should be 'auto', 'on' or 'off'"),
        ("stops_on_contnet = true", "stops_on_contnet: Extra inputs are not permitted"),
        ("port = [", "is not valid TOML"),
    ],
)
def test_a_bad_file_is_refused_in_one_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "gateway.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=r"gateway\.toml") as caught:
        load_serve_config(path, {})
    assert message in str(caught.value)
    result = subprocess.run(
        [SPARKRIG, "gateway", "serve", "http://127.0.0.1:9", "--config", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_a_number_at_the_top_level_is_checked_as_under_gateway(tmp_path: Path) -> None:
    path = tmp_path / "gateway.toml"
    path.write_text("live_guards = false\ndrain_s = 1e400\n")
    with pytest.raises(ConfigError) as caught:
        load_serve_config(path, {})
    assert "gateway.toml line 2: drain_s is '1e400' (not finite" in str(caught.value)
    assert "expected a number from 0 to 3600" in str(caught.value)


def test_a_port_in_use_and_a_bad_flag_are_one_line_errors() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        busy = subprocess.run(
            [SPARKRIG, "gateway", "serve", "http://127.0.0.1:9", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert busy.returncode != 0
    assert f"cannot listen on 127.0.0.1:{port}" in busy.stderr
    assert "pick another --port" in busy.stderr
    bad = subprocess.run(
        [SPARKRIG, "gateway", "serve", "http://127.0.0.1:9", "--reasoning", "maybe"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert bad.returncode == 2
    assert "the command line: reasoning: Input should be 'auto', 'on' or 'off'" in bad.stderr
    for result in (busy, bad):
        assert "Traceback" not in result.stderr
