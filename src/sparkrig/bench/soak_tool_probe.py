"""Which kinds a mixed soak sends: before the first window it sends one tool-call request of the
mix (bench/soak_traffic.py `tool_call_probe`), and leaves tool calls out of the run only when
the server refuses it in an engine's own words for "I do not serve tool calls" (TOOL_REFUSALS);
`--no-tools` leaves them out without asking. A healthy server that serves no tool calls can
then pass a soak, where each tool call would otherwise be a lost request.

Any other answer keeps tool calls in the mix: a transport failure, a timeout, another 5xx,
another 400 (the run then counts each failure as it does today). The refusals, read from the
engines themselves:
- vLLM 0.32.0 served without `--enable-auto-tool-choice --tool-call-parser`: HTTP 400,
  `BadRequestError`, from vllm/renderers/online_renderer.py (a request carrying tools and no
  tool_choice is "auto"); the same words came back from a real vLLM GPU deployment.
- llama-server (llama.cpp 0.3.36, the embedded build) started with `--no-jinja`: HTTP 500,
  `server_error`, `tools param requires --jinja flag` (asked of the build itself; the server
  answers 500 for the std::runtime_error its request parser throws, so this one 500 is a
  refusal and no other is). `--jinja` is that build's default.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from sparkrig.bench.soak_receipt import LeftOutKind
from sparkrig.bench.soak_traffic import KINDS, Kind, tool_call_probe
from sparkrig.client import EndpointClient
from sparkrig.client.records import RequestError


@dataclass(frozen=True)
class ToolRefusal:
    """One engine's answer to a tool-call request when it serves none, and how to serve them."""

    engine: str
    status: int
    message: str  # the whole message, as the engine sends it
    fix: str


TOOL_REFUSALS: Final = (
    ToolRefusal(
        engine="vLLM",
        status=400,
        message='"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser '
        "to be set",
        fix="vLLM: serve with --enable-auto-tool-choice --tool-call-parser NAME to soak tool calls",
    ),
    ToolRefusal(
        engine="llama.cpp",
        status=500,
        message="tools param requires --jinja flag",
        fix="llama.cpp: start llama-server with --jinja (not --no-jinja) to soak tool calls",
    ),
)


def tool_refusal(error: RequestError | None) -> LeftOutKind | None:
    """tool_call left out, when `error` is an engine saying it serves no tool calls; else None.
    Pure: the status and the whole message must both be one of TOOL_REFUSALS."""
    if error is None or error.kind != "http_status" or error.server is None:
        return None
    said = error.server.message
    for refusal in TOOL_REFUSALS:
        if error.status == refusal.status and said == refusal.message:
            return LeftOutKind(
                kind="tool_call",
                by="server",
                server_said=f"HTTP {error.status} {said!r}",
                fix=refusal.fix,
            )
    return None


async def probe_tool_calls(client: EndpointClient, model: str) -> LeftOutKind | None:
    """Send the one tool-call probe; tool_call left out if the server refused it as above."""
    planned = tool_call_probe(model)
    planned.request.headers["X-Request-Id"] = planned.request_id
    record = await client.send(planned.request)
    return tool_refusal(record.error)


async def mixed_kinds(
    client: EndpointClient, model: str, *, no_tools: bool
) -> tuple[tuple[Kind, ...], list[LeftOutKind]]:
    """The kinds a mixed soak cycles over, and those it leaves out with why."""
    if no_tools:
        left_out = [LeftOutKind(kind="tool_call", by="flag")]
    else:
        refused = await probe_tool_calls(client, model)
        left_out = [] if refused is None else [refused]
    gone = {left.kind for left in left_out}
    return tuple(kind for kind in KINDS if kind not in gone), left_out
