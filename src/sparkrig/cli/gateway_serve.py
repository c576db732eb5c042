"""`sparkrig gateway serve UPSTREAM`: the serving gateway, until SIGTERM or Ctrl-C (both drain)."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from sparkrig import defaults
from sparkrig.cli.common import NON_NEGATIVE, PORT, Range, ranged
from sparkrig.errors import UsageError


def server_kwargs_of(cluster: Path, profile: str | None) -> dict[str, bool | str]:
    """The cluster profile's default_chat_template_kwargs: what the upstream's requests inherit."""
    from sparkrig.config import load_cluster

    try:
        chosen = load_cluster(cluster).chosen_profile(profile)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    return dict(chosen.default_chat_template_kwargs)


def serve(
    upstream: Annotated[str, typer.Argument(help="base URL of the server to proxy")],
    config: Annotated[
        Path | None, typer.Option(help="TOML settings file (docs/gateway.md); flags win")
    ] = None,
    host: Annotated[str | None, typer.Option(help="address to listen on [127.0.0.1]")] = None,
    port: Annotated[int | None, ranged("port to listen on (default: a free one)", PORT)] = None,
    reasoning: Annotated[
        str | None, typer.Option(help="which chat requests reason: auto, on or off [auto]")
    ] = None,
    cluster: Annotated[
        Path | None,
        typer.Option(
            help="cluster file of the upstream: its profile's default_chat_template_kwargs are "
            "what a request inherits (a request inheriting thinking is a reasoning one)"
        ),
    ] = None,
    profile: Annotated[
        str | None, typer.Option(help="the cluster file's [profiles.NAME] (default: [profile])")
    ] = None,
    reasoning_model: Annotated[
        list[str] | None, typer.Option(help="a model name (glob) that always reasons; repeatable")
    ] = None,
    stops_on_content: Annotated[
        bool | None,
        typer.Option(
            "--stops-on-content/--no-stops-on-content",
            help="apply a reasoning request's stops here, to the content only [on]",
        ),
    ] = None,
    normalise_reasoning: Annotated[
        bool | None,
        typer.Option(
            "--normalise-reasoning/--no-normalise-reasoning",
            help="give reasoning under --reasoning-keys whatever the upstream used [on]",
        ),
    ] = None,
    reasoning_keys: Annotated[
        str | None, typer.Option(help="both, reasoning_content or reasoning [both]")
    ] = None,
    template_opens_think: Annotated[
        bool | None,
        typer.Option(
            "--template-opens-think/--no-template-opens-think",
            help="the upstream's template opens <think> in the prompt [off]",
        ),
    ] = None,
    live_guards: Annotated[
        bool | None,
        typer.Option("--live-guards/--no-live-guards", help="detectors on every reply [on]"),
    ] = None,
    guard_log: Annotated[Path | None, typer.Option(help="JSONL file of detector findings")] = None,
    workload_log: Annotated[
        Path | None, typer.Option(help="JSONL file, one line per request (soak --replay)")
    ] = None,
    record_prompts: Annotated[
        bool | None,
        typer.Option("--record-prompts/--no-record-prompts", help="keep prompt text [off]"),
    ] = None,
    stretch: Annotated[
        float | None,
        ranged(
            "deliver replies this share slower than the upstream made them, e.g. 0.1 "
            "(benchmarks) [0]",
            Range(low=0, high=defaults.GATEWAY_MAX_STRETCH),
        ),
    ] = None,
    drain_s: Annotated[
        float | None, ranged("SIGTERM: seconds in-flight replies get to finish", NON_NEGATIVE)
    ] = None,
) -> None:
    """Serve UPSTREAM: stops on content only, one reasoning field, live guards, workload log.

    Binds 127.0.0.1 unless --host says otherwise; /metrics and /health are the gateway's own."""
    from sparkrig.gateway.serve import running_serving_gateway
    from sparkrig.gateway.serve_config import load_serve_config

    if profile is not None and cluster is None:
        raise UsageError("--profile names a profile of --cluster — pass --cluster FILE too")
    server_kwargs = server_kwargs_of(cluster, profile) if cluster is not None else None
    settings = load_serve_config(
        config,
        {
            "server_chat_template_kwargs": server_kwargs,
            "host": host,
            "port": port,
            "reasoning": reasoning,
            "reasoning_models": reasoning_model or None,
            "stops_on_content": stops_on_content,
            "normalise_reasoning": normalise_reasoning,
            "reasoning_keys": reasoning_keys,
            "template_opens_think": template_opens_think,
            "live_guards": live_guards,
            "guard_log": guard_log,
            "workload_log": workload_log,
            "record_prompts": record_prompts,
            "stretch": stretch,
            "drain_s": drain_s,
        },
    )
    console = Console()

    async def run() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        async with running_serving_gateway(upstream, settings) as (url, _gateway):
            console.print(f"gateway serve {url} -> {upstream}", highlight=False)
            on = [
                name
                for name, enabled in (
                    ("stops on content", settings.stops_on_content),
                    (f"reasoning keys: {settings.reasoning_keys}", settings.normalise_reasoning),
                    ("live guards", settings.live_guards),
                    (f"workload log: {settings.workload_log}", settings.workload_log),
                )
                if enabled
            ]
            console.print(f"reasoning {settings.reasoning}; " + ", ".join(on), highlight=False)
            if settings.server_chat_template_kwargs:
                inherited = settings.server_chat_template_kwargs
                console.print(f"server default chat_template_kwargs: {inherited}", highlight=False)
            console.print(f"{url}/metrics, {url}/health; SIGTERM or Ctrl-C drains", style="dim")
            await stop.wait()
            console.print(f"draining (up to {settings.drain_s:g} s)", highlight=False)
        console.print("gateway stopped")

    asyncio.run(run())
