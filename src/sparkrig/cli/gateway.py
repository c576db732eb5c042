"""`sparkrig gateway`: `serve` (the serving gateway) and `inject` (the fault-injecting proxy,
also reached as plain `sparkrig gateway URL --inject …`), each in front of a server until stopped.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

import typer
from rich.console import Console
from typer.core import TyperGroup

from sparkrig import defaults
from sparkrig.cli.common import COUNT, FRACTION, NON_NEGATIVE, PORT_OR_ZERO, ranged
from sparkrig.cli.gateway_serve import serve


class _InjectByDefault(TyperGroup):
    """`sparkrig gateway URL …` (no subcommand) is `sparkrig gateway inject URL …`, as before."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["inject", *args]
        return super().parse_args(ctx, args)


gateway_app = typer.Typer(
    cls=_InjectByDefault,
    help="An OpenAI-compatible proxy in front of a server: `serve` for traffic, `inject` to "
    "inject faults (docs/gateway.md).",
    no_args_is_help=True,
)


# typer options are positional, and the command imports its stage lazily, as everywhere in cli/
@gateway_app.command("inject")
def gateway(
    upstream: Annotated[str, typer.Argument(help="base URL of the server to proxy")],
    port: Annotated[int, ranged("port to listen on (0: a free one)", PORT_OR_ZERO)] = 0,
    host: Annotated[str, typer.Option(help="address to listen on")] = defaults.LOCAL_HOST,
    inject: Annotated[
        str, typer.Option(help="comma-separated faults to inject, e.g. loop,markup-leak")
    ] = "",
    after: Annotated[
        int,
        ranged(
            "degrade-after, drift-after: generation requests served before it fires",
            NON_NEGATIVE,
        ),
    ] = defaults.GATEWAY_DEGRADE_AFTER_REQUESTS,
    emulate_reasoning: Annotated[
        bool,
        typer.Option(
            "--emulate-reasoning",
            help="serve the start of each chat reply as reasoning_content, stops on content only",
        ),
    ] = False,
    reasoning_chars: Annotated[
        int, ranged("characters of each reply served as reasoning", COUNT)
    ] = defaults.GATEWAY_REASONING_CHARS,
    long_prompt_chars: Annotated[
        int, ranged("prompt characters that make a prompt long", COUNT)
    ] = defaults.GATEWAY_LONG_PROMPT_CHARS,
    wrong_share: Annotated[
        float,
        ranged(
            "wrong-under-load: share of the prompts whose replies are altered when they "
            "arrive beside another, by the prompt's CRC-32 (1: every one)",
            FRACTION,
        ),
    ] = defaults.GATEWAY_WRONG_UNDER_LOAD_SHARE,
) -> None:
    """Proxy UPSTREAM, injecting faults that guards must catch (docs/gateway.md lists them).

    Every other path passes through unchanged; with no fault the gateway is transparent."""
    from sparkrig.client.http_failures import checked_base_url
    from sparkrig.gateway import Fault, GatewayConfig, parse_faults, running_gateway

    checked_base_url(upstream)  # the gateway would otherwise answer every request with a 502

    config = GatewayConfig(
        faults=parse_faults(inject),
        after_requests=after,
        emulate_reasoning=emulate_reasoning,
        reasoning_chars=reasoning_chars,
        long_prompt_chars=long_prompt_chars,
        wrong_share=wrong_share,
    )
    console = Console()

    async def serve() -> None:
        async with running_gateway(upstream, config, host=host, port=port) as url:
            faults = ", ".join(fault.value for fault in config.faults) or "none (transparent)"
            console.print(f"gateway {url} -> {upstream}", highlight=False)
            console.print(f"faults: {faults}", highlight=False)
            if emulate_reasoning:
                console.print(f"reasoning emulation: first {reasoning_chars} characters")
            elif Fault.STOP_IN_REASONING in config.faults:
                console.print(
                    "[yellow]warning:[/] stop-in-reasoning does nothing without reasoning — "
                    "add --emulate-reasoning"
                )
            console.print("Ctrl-C to stop", style="dim")
            await asyncio.Event().wait()

    try:
        asyncio.run(serve())
    except KeyboardInterrupt:
        console.print("gateway stopped")


gateway_app.command("serve")(serve)
