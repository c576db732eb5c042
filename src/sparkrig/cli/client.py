"""`sparkrig ask / metrics`: sparkrig's client against any server."""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer
from rich.table import Table

from sparkrig import defaults
from sparkrig.cli.common import (
    JsonFlag,
    Range,
    app,
    console,
    err_console,
    print_json,
    ranged,
)
from sparkrig.errors import SparkrigError


@app.command()
def ask(
    url: Annotated[str, typer.Argument(help="base URL of an OpenAI-compatible server")],
    prompt: Annotated[str, typer.Argument(help="the user message")],
    model: Annotated[
        str | None, typer.Option(help="model id (default: the server's first)")
    ] = None,
    max_tokens: Annotated[
        int,
        ranged("tokens to generate at most", Range(low=1, high=defaults.BENCH_MAX_DECODE_TOKENS)),
    ] = 128,
    no_stream: Annotated[bool, typer.Option("--no-stream", help="ask for one JSON reply")] = False,
    api_key_env: Annotated[
        str | None,
        typer.Option(
            help="env var holding the API key (default: SPARKRIG_API_KEY, else VLLM_API_KEY, "
            "the variable vLLM and a cluster file's engine.api_key_env read)"
        ),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Send one chat request through sparkrig's client and show its timing record."""
    from sparkrig.client.probe import ask_once

    # visible while a cold prefill keeps the first byte away (shown on a terminal only)
    with err_console.status(f"waiting for {url} (a cold prefill can take minutes)"):
        record = asyncio.run(
            ask_once(
                url,
                prompt,
                model=model,
                max_tokens=max_tokens,
                stream=not no_stream,
                api_key_env=api_key_env,
            )
        )
    if as_json:
        print_json(record.model_dump(mode="json"))
    if record.error is not None:
        raise SparkrigError(record.error.message)
    if not (record.content or record.reasoning or record.tool_calls):
        raise SparkrigError(
            f"the server finished with an empty reply ({len(record.events)} events, "
            f"finish_reason {record.finish_reason or 'not sent'}, "
            f"{_tokens(record.completion_tokens)}) — check "
            "the model answers this prompt (its chat template, stop strings, --max-tokens)"
        )
    if not as_json:
        if record.reasoning and not record.content:
            console.print(f"(reasoning only) {record.reasoning}", markup=False, highlight=False)
        console.print(record.content, markup=False, highlight=False)
        console.print(
            f"[dim]{_tokens(record.completion_tokens)} ({record.token_source or 'not counted'}), "
            f"TTFT {_ms(record.ttft_s)}, decode {_rate(record.decode_tps)}, "
            f"finish {record.finish_reason or 'not sent'}[/]"
        )


def _tokens(count: int | None) -> str:
    return "token count not reported" if count is None else f"{count} tokens"


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value * 1000:.0f} ms"


def _rate(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f} tok/s"


@app.command()
def metrics(
    url: Annotated[str, typer.Argument(help="base URL of the server (its /metrics is read)")],
    as_json: JsonFlag = False,
) -> None:
    """Scrape /metrics and show sparkrig's quantities; "not exposed" where the engine has none."""
    from sparkrig.client.probe import scrape_once

    snapshot = asyncio.run(scrape_once(url))
    values = {quantity.value: value for quantity, value in snapshot.canonical().items()}
    if as_json:
        print_json({"engine": snapshot.engine, "quantities": values})
        return
    table = Table(title=f"/metrics · {snapshot.engine or 'unknown engine'}")
    table.add_column("quantity")
    table.add_column("value", justify="right")
    for key, value in values.items():
        table.add_row(key, "not exposed" if value is None else str(value))
    console.print(table)
