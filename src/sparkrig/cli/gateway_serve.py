"""`sparkrig gateway serve UPSTREAM`: the serving gateway, until SIGTERM or Ctrl-C (both drain)."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from sparkrig.cli.common import PORT, ranged
from sparkrig.cli.model_options import setting
from sparkrig.errors import UsageError
from sparkrig.gateway.serve_config import ServeConfig


def server_kwargs_of(cluster: Path, profile: str | None) -> dict[str, bool | str]:
    """The cluster profile's default_chat_template_kwargs: what the upstream's requests inherit."""
    from sparkrig.config import load_cluster

    try:
        chosen = load_cluster(cluster).chosen_profile(profile)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    return dict(chosen.default_chat_template_kwargs)


def _flag(name: str, *flags: str, note: str | None = None) -> Any:
    """A flag bound to ServeConfig's field `name` (help, bounds); its default is None, so a
    --config file's value stands unless the flag is given, and the field's default says what
    applies when neither is."""
    default = ServeConfig.model_fields[name].get_default(call_default_factory=True)
    if isinstance(default, bool):  # a switch: its on or off, not Python's True or False
        default = "on" if default else "off"
    shown = f"default {default}" if default not in (None, [], {}) else None
    return setting(
        ServeConfig, name, *flags, default=None, note="; ".join(filter(None, (note, shown)))
    )


def serve(
    upstream: Annotated[str, typer.Argument(help="base URL of the server to proxy")],
    config: Annotated[
        Path | None, typer.Option(help="TOML settings file (docs/gateway.md); flags win")
    ] = None,
    host: str | None = _flag("host", "--host"),
    port: Annotated[int | None, ranged("port to listen on (default: a free one)", PORT)] = None,
    reasoning: str | None = _flag("reasoning", "--reasoning"),
    cluster: Annotated[
        Path | None,
        typer.Option(
            help="cluster file of the upstream: its profile's default_chat_template_kwargs are "
            "what a request inherits (a request inheriting thinking is a reasoning one)"
        ),
    ] = None,
    profile: Annotated[
        str | None,
        typer.Option(help="the cluster file's profiles.NAME table (default: its profile table)"),
    ] = None,
    reasoning_model: list[str] | None = _flag(
        "reasoning_models", "--reasoning-model", note="repeatable"
    ),
    stops_on_content: bool | None = _flag(
        "stops_on_content", "--stops-on-content/--no-stops-on-content"
    ),
    normalise_reasoning: bool | None = _flag(
        "normalise_reasoning", "--normalise-reasoning/--no-normalise-reasoning"
    ),
    reasoning_keys: str | None = _flag("reasoning_keys", "--reasoning-keys"),
    template_opens_think: bool | None = _flag(
        "template_opens_think", "--template-opens-think/--no-template-opens-think"
    ),
    live_guards: bool | None = _flag("live_guards", "--live-guards/--no-live-guards"),
    guard_log: Path | None = _flag("guard_log", "--guard-log"),
    workload_log: Path | None = _flag("workload_log", "--workload-log", note="soak --replay"),
    record_prompts: bool | None = _flag("record_prompts", "--record-prompts/--no-record-prompts"),
    stretch: float | None = _flag("stretch", "--stretch"),
    stretch_first: int | None = _flag("stretch_first", "--stretch-first"),
    drain_s: float | None = _flag("drain_s", "--drain-timeout", "--drain-s"),
) -> None:
    """Serve UPSTREAM: stops on content only, one reasoning field, live guards, workload log.

    Binds 127.0.0.1 unless --host says otherwise. Transparent: every path it does not own reaches
    the engine and comes back as the engine sent it, /metrics (the engine's series) and /health
    (the engine's health; 503 while the gateway drains or the engine does not answer) included.
    It changes a reply only where a feature applies (the stops and the reasoning key, on a
    reasoning request's chat reply) and owns /gateway/metrics and /gateway/health. A client that
    leaves closes its request upstream (vLLM aborts it; llama-server, a streamed one). It adds
    no authentication, TLS or rate limits: put a reverse proxy in front for those
    (docs/gateway.md#what-passes-through-unchanged)."""
    from sparkrig.gateway.serve import running_serving_gateway, upstream_silence
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
            "stretch_first": stretch_first,
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
                inherited = json.dumps(settings.server_chat_template_kwargs)
                console.print(f"server default chat_template_kwargs: {inherited}", highlight=False)
            if (why := await upstream_silence(upstream)) is not None:
                console.print(
                    f"warning: the engine at {upstream} does not answer ({why}); the gateway "
                    "answers 502, and /health 503, until it does",
                    style="yellow",
                    highlight=False,
                )
            console.print(
                f"its own: {url}/gateway/metrics, {url}/gateway/health; the engine's /metrics and "
                "/health pass through; SIGTERM or Ctrl-C drains",
                style="dim",
                highlight=False,
            )
            await stop.wait()
            console.print(f"draining (up to {settings.drain_s:g} s)", highlight=False)
        console.print("gateway stopped")

    asyncio.run(run())
