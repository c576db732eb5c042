"""Hostile servers: malformed events, wrong bodies, web pages, loops, silence, non-HTTP peers.
Each request's failure is recorded and the command fails in one line that names the cause."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from tests.hostile.conftest import one_line_failure, run_cli
from tests.hostile.fake_server import MALFORMED, FakeServer, raw_tcp_server


def ask(url: str, *extra: str, env: dict[str, str] | None = None) -> str:
    return one_line_failure(run_cli("ask", url, "hi", "--model", "m", *extra, env=env))


@pytest.mark.parametrize("scenario", list(MALFORMED))
def test_a_malformed_event_names_its_field_and_number(scenario: str, fake: FakeServer) -> None:
    _, field = MALFORMED[scenario]
    line = ask(fake.url(scenario))
    assert "SSE event 2" in line
    assert field in line


BODIES = {
    "body-list": "not an object",
    "body-string": "not an object",
    "body-choices-number": "choices",
    "body-message-string": "choices[0].message",
    "body-deep": "JSON",
    "body-not-json": "not JSON",
    "body-binary": "not JSON",
    "html-200": "Sign in",
    "empty-choices": "empty reply",
}


@pytest.mark.parametrize("scenario", list(BODIES))
def test_a_wrong_whole_reply_is_named(scenario: str, fake: FakeServer) -> None:
    assert BODIES[scenario] in ask(fake.url(scenario), "--no-stream")


STREAMS = {
    "event-list": "not an object",
    "event-null": "not an object",
    "event-number": "not an object",
    "event-not-json": "not JSON",
    "event-error": "boom",
    "event-deep": "JSON",
    "empty-stop": "empty reply",
    "empty-choices": "empty reply",
    "only-done": "empty reply",
    "content-null": "empty reply",
    "ends-early": "no [DONE]",
    "comments-only": "ended after 0 events",
    "html-200": "Sign in",
}


@pytest.mark.parametrize("scenario", list(STREAMS))
def test_a_wrong_stream_is_named(scenario: str, fake: FakeServer) -> None:
    assert STREAMS[scenario] in ask(fake.url(scenario))


HTTP_ERRORS = {
    "html-500": "Sign in",
    "huge-500": "cut",
    "http-400": "[/INST]",
    "http-401": "API key",
    "http-404": "/v1",
    "http-429": "429",
    "http-500": "model exploded",
    "http-503": "loading model",
    "redirect-loop": "redirects in a loop",
}


@pytest.mark.parametrize("scenario", list(HTTP_ERRORS))
def test_an_http_failure_names_its_cause_and_is_cut(scenario: str, fake: FakeServer) -> None:
    line = ask(fake.url(scenario))
    assert HTTP_ERRORS[scenario] in line
    assert len(line) < 500


MODEL_LISTS = {
    "models-empty": "lists no models",
    "models-html": "web page titled 'Sign in'",
    "models-html-404": "web page",
    "models-404": "HTTP 404",
    "models-500-huge": "cut",
    "models-not-json": "did not answer JSON",
    "models-no-data": "`data` list",
    "models-data-string": "`data` list",
    "models-list": "`data` list",
    "models-id-number": "`id`",
    "models-entry-string": "`id`",
    "models-deep": "did not answer JSON",
    "redirect-loop": "redirects in a loop",
}


@pytest.mark.parametrize("scenario", list(MODEL_LISTS))
@pytest.mark.parametrize("command", ["ask", "bench", "check"])
def test_a_useless_model_list_is_named(command: str, scenario: str, fake: FakeServer) -> None:
    args = [command, fake.url(scenario)] + (
        ["hi"] if command == "ask" else ["--out", "/dev/null/x"]
    )
    if command != "ask":
        args = [command, fake.url(scenario)]
    line = one_line_failure(run_cli(*args), MODEL_LISTS[scenario], progress=command != "ask")
    assert "/v1/models" in line


METRICS = {
    "metrics-html": "web page titled 'Sign in'",
    "metrics-binary": "not Prometheus",
    "metrics-500": "HTTP 500",
    "ok": "HTTP 404",
}


@pytest.mark.parametrize("scenario", list(METRICS))
def test_metrics_that_are_not_metrics_are_named(scenario: str, fake: FakeServer) -> None:
    one_line_failure(run_cli("metrics", fake.url(scenario)), METRICS[scenario])


# --- peers that are not HTTP servers, hosts that are not there --------------------------------


@pytest.fixture
def refused_url() -> Iterator[str]:
    with socket.socket() as holder:  # bound, never listening: connections are refused
        holder.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{holder.getsockname()[1]}"


PEERS = {
    "ssh-banner": (b"SSH-2.0-OpenSSH_9.6\r\n", "does not speak HTTP"),
    "redis-error": (b"-ERR unknown command\r\n", "does not speak HTTP"),
    "closes-at-once": (None, "closed the connection"),
}


@pytest.mark.parametrize("peer", list(PEERS))
@pytest.mark.parametrize("command", ["ask", "metrics", "bench"])
def test_a_peer_that_is_not_http_is_named(command: str, peer: str) -> None:
    answer, says = PEERS[peer]
    with raw_tcp_server(answer) as url:
        args = [command, url, "hi"] if command == "ask" else [command, url]
        one_line_failure(run_cli(*args), says, progress=command == "bench")


@pytest.mark.parametrize("command", ["ask", "metrics", "bench", "check"])
def test_a_refused_port_says_nothing_listens(command: str, refused_url: str) -> None:
    args = [command, refused_url, "hi"] if command == "ask" else [command, refused_url]
    one_line_failure(run_cli(*args), "nothing is listening", progress=command != "ask")


@pytest.mark.parametrize("command", ["ask", "metrics"])
def test_a_host_that_does_not_resolve_is_not_blamed_on_the_port(command: str) -> None:
    url = "http://no-such-host.invalid:8080"
    args = [command, url, "hi"] if command == "ask" else [command, url]
    line = one_line_failure(run_cli(*args), "does not resolve")
    assert "port" not in line.split(" — ")[1]


URLS = {
    "localhost:8080": "no scheme",
    "127.0.0.1:8080/v1": "no scheme",
    "ftp://127.0.0.1:21": "ftp://",
    "http://127.0.0.1:99999": "out of range",
    "http://127.0.0.1:-1": "not a URL",
    "http://": "no host",
    "http:///v1": "no host",
    "": "no scheme",
}


@pytest.mark.parametrize("url", list(URLS))
@pytest.mark.parametrize("command", ["ask", "metrics", "bench", "check"])
def test_a_url_that_cannot_work_is_refused_before_sending(command: str, url: str) -> None:
    args = [command, url, "hi"] if command == "ask" else [command, url]
    one_line_failure(run_cli(*args), URLS[url])


# --- silence: each timeout is named -----------------------------------------------------------

FAST = {"SPARKRIG_FIRST_BYTE_TIMEOUT_S": "0.5", "SPARKRIG_IDLE_TIMEOUT_S": "0.5"}


def test_a_server_that_never_answers_hits_the_first_byte_timeout(fake: FakeServer) -> None:
    line = ask(fake.url("silent"), env=FAST)
    assert "first-byte timeout" in line
    assert "SPARKRIG_FIRST_BYTE_TIMEOUT_S" in line


def test_a_stream_that_goes_quiet_hits_the_idle_timeout(fake: FakeServer) -> None:
    line = ask(fake.url("one-event-then-silence"), env=FAST)
    assert "idle timeout" in line
    assert "1 events" in line


def test_a_peer_that_accepts_and_says_nothing_hits_the_first_byte_timeout() -> None:
    with raw_tcp_server(None, hold_s=3) as url:
        assert "first-byte timeout" in ask(url, env=FAST)


@pytest.mark.parametrize("value", ["0", "-1", "soon", "nan"])
def test_a_bad_timeout_setting_is_one_line(value: str, fake: FakeServer) -> None:
    assert "SPARKRIG_IDLE_TIMEOUT_S" in ask(fake.url("ok"), env={"SPARKRIG_IDLE_TIMEOUT_S": value})


@pytest.mark.parametrize("bad", ["localhost:1", "ftp://x", "http://127.0.0.1:99999"])
def test_the_gateway_refuses_an_upstream_it_cannot_use(bad: str) -> None:
    one_line_failure(run_cli("gateway", bad))


def test_the_gateway_on_a_taken_port_is_one_line() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        one_line_failure(run_cli("gateway", "http://127.0.0.1:9", "--port", port), "--port")


def test_the_gateway_on_a_host_that_does_not_resolve_blames_the_host() -> None:
    line = one_line_failure(run_cli("gateway", "http://127.0.0.1:9", "--host", "nowhere.invalid"))
    assert "--host" in line


@pytest.mark.parametrize("key", ["secret\n", "a\rb", "tab\there", "bell\x07"])
def test_an_api_key_with_a_control_character_is_one_line(key: str, fake: FakeServer) -> None:
    outcome = run_cli("ask", fake.url("ok"), "hi", env={"SPARKRIG_API_KEY": key})
    line = one_line_failure(outcome, "API key", "control character")
    assert key.strip() not in line  # the key itself is never printed


@pytest.mark.parametrize("url", ["http://127.0.0.1:9/?model=m", "http://127.0.0.1:9/#v1"])
def test_a_url_with_a_query_or_fragment_is_refused(url: str) -> None:
    one_line_failure(run_cli("ask", url, "hi"), "query or fragment")


def test_a_stream_that_ignores_max_tokens_is_cut_off(fake: FakeServer) -> None:
    line = ask(fake.url("endless"), "--max-tokens", "8")
    assert "ignores max_tokens" in line


def test_an_event_that_never_ends_is_cut_off(fake: FakeServer) -> None:
    assert "data lines" in ask(fake.url("endless-event"))


def test_a_long_model_list_is_read_whole(fake: FakeServer) -> None:
    outcome = run_cli("ask", fake.url("models-big"), "hi")
    assert outcome.code == 0, outcome.stderr
    assert "Hello" in outcome.stdout
