"""What a user reads never says Python's `None`, `True` or `False`: a value that is not there
reads "not set", "not sent" or "—", a switch "on" or "off", a mapping as JSON.

Every command's `--help` is read in-process; then each message that used to show such a word is
made to show it again, from the real part that writes it.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
from aiohttp import web
from typer.testing import CliRunner

from sparkrig.cli import app
from sparkrig.cli.one_line import describe_failure
from sparkrig.cli.receipt_files import load_any_receipt
from sparkrig.client.records import RequestRecord
from sparkrig.errors import UsageError
from sparkrig.gateway.live_guards import SWITCH_CONFLICT_DETECTOR, reply_findings
from sparkrig.gateway.shaping import ReplyText
from sparkrig.guards.divergence import reference_problem
from sparkrig.guards.reply_shape import answerless_shape
from sparkrig.guards.stop_in_reasoning import no_reasoning_reason
from sparkrig.wire.reasoning_families import family_of
from tests.http_servers import serve_app

PYTHON_WORD = re.compile(r"\b(None|True|False)\b")
RECEIPTS = Path(__file__).resolve().parents[1] / "fixtures" / "receipts"
SPARKRIG = str(Path(sys.executable).with_name("sparkrig"))


def command_paths(command: Any = None, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """The root, every group and every command, as the words that reach it."""
    command = typer.main.get_command(app) if command is None else command
    found = [path]
    for name, sub in sorted((getattr(command, "commands", None) or {}).items()):
        found += command_paths(sub, (*path, name))
    return found


def help_of(*path: str) -> str:
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("path", command_paths(), ids=lambda path: " ".join(path) or "sparkrig")
def test_no_help_shows_pythons_words(path: tuple[str, ...]) -> None:
    shown = [line.strip() for line in help_of(*path).splitlines() if PYTHON_WORD.search(line)]
    assert not shown, f"sparkrig {' '.join(path)} --help shows: {shown}"


def test_the_walk_reaches_every_subcommand() -> None:
    assert {("fabric", "test"), ("gateway", "serve"), ("engine", "install")} <= set(command_paths())


def test_gateway_serve_says_a_switchs_default_as_on_or_off() -> None:
    text = " ".join(help_of("gateway", "serve").split())
    assert "run the cheap detectors on every reply (default on)" in text
    assert "(default off)" in text


def test_checks_help_says_what_an_unset_count_falls_back_to() -> None:
    text = " ".join(help_of("check").split())
    assert "load_accuracy's c = N (default: the server's slots from /props, else 8)" in text


def test_a_help_keeps_a_table_name_in_brackets() -> None:
    """`[engine]` is rich markup unless escaped: the help showed "` device = "cpu"`"."""
    assert '`[engine] device = "cpu"`' in " ".join(help_of("engine", "install").split())


def reply(**fields: Any) -> RequestRecord:
    return RequestRecord(url="http://h/v1", api="chat", stream=True, model="m", send_ns=0, **fields)


def test_a_reply_without_a_finish_reason_says_it_was_not_sent() -> None:
    assert answerless_shape(reply()) == "finish not sent, tokens not counted, no reasoning"
    problem = reference_problem([reply()]) or ""
    assert "finish_reason not sent" in problem
    assert not PYTHON_WORD.search(problem)


def test_a_switch_conflict_reads_on_and_off() -> None:
    body = {"model": "m", "chat_template_kwargs": {"thinking": False}, "reasoning_effort": "high"}
    (finding,) = [
        f
        for f in reply_findings(ReplyText(content="hi"), body)
        if f.detector == SWITCH_CONFLICT_DETECTOR
    ]
    assert (
        finding.evidence == "one thinking switch on, one off (thinking read as on; effort 'high')"
    )


def test_the_switches_a_guard_asked_with_are_json() -> None:
    reason = no_reasoning_reason(family_of("m"), {"enable_thinking": True})
    assert 'asked with {"enable_thinking": true}' in reason
    assert not PYTHON_WORD.search(reason)


def test_a_receipt_without_a_schema_version_says_so(tmp_path: Path) -> None:
    raw = json.loads((RECEIPTS / "soak-v1.json").read_text())
    del raw["schema_version"]
    path = tmp_path / "soak.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(UsageError) as caught:
        load_any_receipt(path)
    assert "soak receipt no schema_version, this sparkrig reads 1, 2" in str(caught.value)


def test_a_file_error_without_the_systems_words_names_its_kind() -> None:
    error = PermissionError()
    error.filename = "receipt.json"
    assert describe_failure(error) == (
        "receipt.json: PermissionError — check the path and its permissions",
        1,
    )


def test_engine_info_says_what_a_missing_build_record_means(tmp_path: Path) -> None:
    """A llama-server named by SPARKRIG_LLAMA_SERVER has no rpc server beside it and no build
    time: the table said None for both."""
    found = json.loads(CliRunner().invoke(app, ["engine", "info", "--json"]).output)
    if not found["installed"]:
        pytest.skip("no llama-server built here (`sparkrig engine install`)")
    binary = tmp_path / "llama-server"
    shutil.copy2(found["server_binary"], binary)
    env = {"SPARKRIG_LLAMA_SERVER": str(binary), "SPARKRIG_CACHE_DIR": str(tmp_path / "cache")}
    result = CliRunner().invoke(app, ["engine", "info"], env={**env, "COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "not beside llama-server" in result.output
    assert "not built by sparkrig" in result.output
    assert not PYTHON_WORD.search(result.output), result.output


async def test_ask_says_a_finish_reason_the_server_did_not_send() -> None:
    async def chat(_: web.Request) -> web.Response:
        choice = {"index": 0, "message": {"role": "assistant", "content": "4"}}
        usage = {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}
        return web.json_response({"choices": [choice], "usage": usage})

    server = web.Application()
    server.router.add_post("/v1/chat/completions", chat)
    async with serve_app(server) as url:
        process = await asyncio.create_subprocess_exec(
            *(SPARKRIG, "ask", url, "2+2?", "--model", "m", "--no-stream"),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"},
        )
        output, _ = await asyncio.wait_for(process.communicate(), 60)
    text = output.decode()
    assert process.returncode == 0, text
    assert "finish not sent" in text
    assert not PYTHON_WORD.search(text), text
