"""The prefill text cut at exact depths through the real llama-server's /tokenize and
/detokenize: the depth is reached exactly, cold prompts keep a fresh salt, a short text is
repeated, a cut where the text itself skips a count is still made exact, and the filler is cut
the same way when `--prefill-text filler` asks for it."""

from __future__ import annotations

import pytest

from sparkrig import defaults
from sparkrig.bench.corpus import corpus_text
from sparkrig.bench.depth_cut import (
    SALT_HEAD,
    SEPARATOR,
    ServerTokenizer,
    cut_depths,
    cut_to_count,
    salt_for,
    source_tokens,
)
from sparkrig.bench.point import BenchSettings
from sparkrig.bench.prefill_text import prefill_prompts
from sparkrig.client import EndpointClient
from sparkrig.launch.local import LocalInstance

pytestmark = [pytest.mark.engine, pytest.mark.asyncio(loop_scope="session")]
# a "\n\n" before "```" is two tokens; at the end of a cut text it merges into one
MERGING = "Run it:\n\n```bash\nmake demo\n```\n\nThen read the receipt.\n\n```json\n{}\n```\n"


async def test_every_depth_re_tokenizes_exactly_and_cold_salts_are_fresh(
    llama_server: LocalInstance,
) -> None:
    async with EndpointClient(llama_server.base_url) as client:
        tokenizer = ServerTokenizer(client, llama_server.alias)
        cuts = await cut_depths(tokenizer, corpus_text(), [128, 512])
        for depth, cut in cuts.items():
            assert set(cut.counts) == {depth}  # the cached prompt and every salt checked
            colds = [cut.cold() for _ in range(4)]
            assert len(set(colds)) == 4  # a fresh salt for every request
            for prompt in [cut.cached, *colds]:
                assert prompt.startswith(SALT_HEAD)
                assert prompt.endswith(cut.body)  # the same text behind every salt
                assert len(await tokenizer.tokenize(prompt)) == depth
            assert cut.body.startswith("File: README.md")  # the corpus from its start
            assert cut.copies == 1


async def test_a_text_shorter_than_the_depth_is_repeated(llama_server: LocalInstance) -> None:
    async with EndpointClient(llama_server.base_url) as client:
        tokenizer = ServerTokenizer(client, llama_server.alias)
        short = "def double(x):\n    return 2 * x  # twice\n"
        own = len(await tokenizer.tokenize(short))
        cut = (await cut_depths(tokenizer, short, [300]))[300]
    assert own * 4 < 300
    assert set(cut.counts) == {300}
    assert cut.copies >= 4
    assert cut.body.startswith(short + SEPARATOR + short + SEPARATOR)


async def test_a_count_no_cut_of_the_text_reaches_is_reached_with_a_word_less_of_salt(
    llama_server: LocalInstance,
) -> None:
    """The fault: where a merge at the cut skips a body length, cutting the text alone misses
    the depth by one; a salt a word shorter or longer makes it exact."""
    async with EndpointClient(llama_server.base_url) as client:
        tokenizer = ServerTokenizer(client, llama_server.alias)
        salt = await salt_for(tokenizer)
        tokens = await source_tokens(tokenizer, MERGING, 40)
        usual = defaults.BENCH_SALT_TOKENS
        skipped = None
        for length in range(2, 30):
            depth = salt.tokens(usual) + length
            _, count = await cut_to_count(
                tokenizer, tokens, depth, salt.fresh(usual), salt.tokens(usual)
            )
            if count != depth:
                skipped = depth
                break
        if skipped is None:
            pytest.skip("this server's tokenizer does not merge a trailing blank line")
        cut = (await cut_depths(tokenizer, MERGING, [skipped]))[skipped]
    assert cut.salt_words != usual
    assert set(cut.counts) == {skipped}


async def test_prefill_text_filler_is_cut_the_same_way_and_recorded_as_filler(
    llama_server: LocalInstance,
) -> None:
    settings = BenchSettings(prefill_text="filler", prefill_depths=[64])
    async with EndpointClient(llama_server.base_url) as client:
        prompts = await prefill_prompts(client, llama_server.alias, settings)
    assert set(prompts.cuts[64].counts) == {64}
    record = prompts.record(64, cold=True, token_ids=False)
    assert (record.text, record.method, record.exact) == ("filler", "cut, re-tokenized", True)
    assert record.salt_tokens == prompts.cuts[64].salt_tokens
    assert prompts.cuts[64].body.startswith("Line 0 notes that crate 0 holds 0 apples.")
