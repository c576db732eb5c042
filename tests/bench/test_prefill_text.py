"""`--prefill-text`: the bundled corpus ships with the package, and where a server cannot cut it
(no /tokenize, or /tokenize without /detokenize) the prefill suite falls back to the filler and
says so, in the receipt and on every prefill point. The stand-ins are engines without those
endpoints: an unknown route answers 404, as llama.cpp's and vLLM's would were they absent."""

from __future__ import annotations

import asyncio
import hashlib
import json
import tomllib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest_asyncio
from aiohttp import web
from rich.console import Console

from sparkrig.bench.compare import settings_difference
from sparkrig.bench.corpus import CORPUS_FILE, corpus_sha256, corpus_text
from sparkrig.bench.point import BenchSettings
from sparkrig.bench.receipt import load_receipt
from sparkrig.bench.run import run_bench
from sparkrig.cli.views.bench_table import bench_table
from tests.http_servers import serve_app

ROOT = Path(__file__).resolve().parents[2]
CORPUS_DIR = ROOT / "src" / "sparkrig" / "bench" / "corpus"
TOKENS = 12


def test_the_corpus_is_small_mixed_real_text_and_ships_with_the_package() -> None:
    text = corpus_text()
    assert len(text.encode()) < 300_000  # a few hundred KB at most
    assert text.count("```python") >= 4
    assert text.count("markdown\n") >= 3  # code and prose by turns
    notice = (CORPUS_DIR / "NOTICE.md").read_text(encoding="utf-8")
    assert corpus_sha256() in notice  # the notice names the text it describes
    assert hashlib.sha256((CORPUS_DIR / CORPUS_FILE).read_bytes()).hexdigest() == corpus_sha256()
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    shipped = data["package-data"]["sparkrig"]
    assert f"bench/corpus/{CORPUS_FILE}" in shipped
    assert "bench/corpus/NOTICE.md" in shipped


def sse(chunk: dict[str, object]) -> bytes:
    return f"data: {json.dumps(chunk)}\n\n".encode()


async def completion(request: web.Request) -> web.StreamResponse:
    """Streams max_tokens words; the prompt counts one token per id or per word."""
    body = await request.json()
    prompt, tokens = body.get("prompt", ""), body["max_tokens"]
    counted = len(prompt) if isinstance(prompt, list) else len(str(prompt).split())
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    for index in range(1, tokens + 1):
        await asyncio.sleep(0.001)
        chunk = {"choices": [{"index": 0, "text": f" w{index}"}]}
        await response.write(sse({**chunk, "timings": {"predicted_n": index}}))
    await response.write(sse({"choices": [{"index": 0, "text": "", "finish_reason": "length"}]}))
    usage = {"prompt_tokens": counted, "completion_tokens": tokens, "total_tokens": tokens + 1}
    await response.write(sse({"choices": [], "usage": usage}))
    await response.write(b"data: [DONE]\n\n")
    return response


async def models(request: web.Request) -> web.Response:
    return web.json_response({"data": [{"id": "known"}]})


async def word_tokenize(request: web.Request) -> web.Response:
    """A /tokenize of one token a word (llama.cpp's `content` key)."""
    body = await request.json()
    return web.json_response({"tokens": list(range(len(str(body["content"]).split())))})


async def stand_in(*, tokenize: bool) -> AsyncIterator[str]:
    app = web.Application()
    app.router.add_post("/v1/completions", completion)
    app.router.add_get("/v1/models", models)
    if tokenize:  # and never /detokenize
        app.router.add_post("/tokenize", word_tokenize)
    async with serve_app(app) as url:
        yield url


@pytest_asyncio.fixture(loop_scope="session")
async def no_tokenize() -> AsyncIterator[str]:
    async for url in stand_in(tokenize=False):
        yield url


@pytest_asyncio.fixture(loop_scope="session")
async def no_detokenize() -> AsyncIterator[str]:
    async for url in stand_in(tokenize=True):
        yield url


SETTINGS = BenchSettings(max_samples=2, prefill_depths=[32], rounds=1, decode_tokens=TOKENS)


async def test_without_tokenize_the_corpus_falls_back_to_estimated_filler_and_says_why(
    no_tokenize: str, tmp_path: Path
) -> None:
    receipt = await run_bench(
        no_tokenize, suites=["prefill"], settings=SETTINGS, out_path=tmp_path / "r.json"
    )
    notes = [w for w in receipt.warnings if w.startswith("prefill text:")]
    assert len(notes) == 1  # said once, not again as a bare /tokenize warning
    assert "corpus asked" in notes[0]
    assert "/tokenize answered HTTP 404" in notes[0]
    assert "estimated 4 characters a token" in notes[0]
    assert [p.name for p in receipt.points] == ["32 cold", "32 cached"]
    table = Console(width=200, record=True)
    table.print(bench_table(receipt))
    assert table.export_text().count("filler text, estimated depth") == 2  # said on each row
    for point in receipt.points:
        assert point.samples  # the fallback still measures
        assert not point.invalid
        assert point.prompt_text is not None
        assert point.prompt_text.text == "filler"
        assert point.prompt_text.method == "estimated"
        assert not point.prompt_text.exact
        assert point.prompt_text.prompt_tokens == []
        assert point.prompt_text.note == notes[0]


async def test_without_detokenize_the_prefill_suite_sends_the_fillers_token_ids(
    no_detokenize: str, tmp_path: Path
) -> None:
    receipt = await run_bench(
        no_detokenize, suites=["prefill"], settings=SETTINGS, out_path=tmp_path / "r.json"
    )
    notes = [w for w in receipt.warnings if w.startswith("prefill text:")]
    assert len(notes) == 1
    assert "/detokenize answered HTTP 404" in notes[0]
    assert "token ids" in notes[0]
    for point in receipt.points:
        assert point.prompt_text is not None
        assert (point.prompt_text.text, point.prompt_text.method) == ("filler", "token ids")
        assert point.prompt_text.exact
        prompts = {r.prompt_tokens for s in point.samples for r in s.requests}
        assert prompts == {32}  # the stand-in counted the ids sent


def test_a_receipt_from_before_the_corpus_reads_as_filler_and_compare_keeps_them_apart() -> None:
    old = load_receipt(ROOT / "tests" / "fixtures" / "receipts" / "bench-v1.json")
    assert old.settings.prefill_text == "filler"  # its prefill prompts were the filler's
    assert BenchSettings().prefill_text == "corpus"
    new = old.model_copy(
        update={"settings": old.settings.model_copy(update={"prefill_text": "corpus"})}
    )
    assert "settings.prefill_text" in settings_difference(old, new)
