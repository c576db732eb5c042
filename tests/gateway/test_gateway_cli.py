"""`sparkrig gateway` prints its URL and faults, serves until Ctrl-C, and refuses unknown faults."""

from __future__ import annotations

import asyncio
import re
import signal
import subprocess

from tests.conftest import SPARKRIG
from tests.gateway.fake_upstream import FakeUpstream, serve_fake
from tests.gateway.replies import chat, send

START_TIMEOUT_S = 30


async def test_gateway_command_serves_until_interrupted() -> None:
    upstream = FakeUpstream(reply_for=lambda body: "Nothing but a plain reply, long enough.")
    async with serve_fake(upstream) as fake_url:
        process = await asyncio.create_subprocess_exec(
            SPARKRIG,
            "gateway",
            fake_url,
            "--inject",
            "markup-leak,wrong-answers",
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        try:
            assert process.stdout is not None
            first = await asyncio.wait_for(process.stdout.readline(), START_TIMEOUT_S)
            second = await asyncio.wait_for(process.stdout.readline(), START_TIMEOUT_S)
            match = re.search(r"gateway (http://\S+) -> ", first.decode())
            assert match, first
            assert second.decode().strip() == "faults: markup-leak, wrong-answers"
            reply = await send(match.group(1), chat("q", stream=True))
            assert reply.content == "Nothing but a plain <|im_end|>reply, long enough."
            process.send_signal(signal.SIGINT)
            rest, _ = await asyncio.wait_for(process.communicate(), START_TIMEOUT_S)
            assert process.returncode == 0
            assert "gateway stopped" in rest.decode()
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()


def test_unknown_fault_is_a_usage_error() -> None:
    result = subprocess.run(
        [SPARKRIG, "gateway", "http://127.0.0.1:9", "--inject", "loops"],
        capture_output=True,
        text=True,
        timeout=START_TIMEOUT_S,
        check=False,
    )
    assert result.returncode == 2
    assert "'loops' is not a fault — use one of" in result.stderr
