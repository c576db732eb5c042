"""Rules about the engine and its serving profile (speculative decoding, memory, caches)."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Literal

from sparkrig.config.cluster import Cluster
from sparkrig.config.serving import ServingProfile
from sparkrig.engines.registry import adapter_for
from sparkrig.engines.vllm.knowledge import version_default
from sparkrig.lint.findings import LintFinding, rule
from sparkrig.wire.reasoning_families import SWITCH_KEYS, thinking_asked

# 0.85 killed a worker with NV_ERR_NO_MEMORY in one report, while another ran a validated profile
# at 0.85 on the same hardware: 0.80 is the margin the first one settled on (field notes:
# unified-memory-080).
UNIFIED_MEMORY_MAX_UTILIZATION = 0.80
UNIFIED_MEMORY_MIXED_EVIDENCE = 0.85  # crashed in one report, validated in another
# dspark_block_size = 5 fixes the draft width (field notes: dspark-k-block-5).
DSPARK_BLOCK_WIDTH = 5
# Compressed-MLA layers carry compress_ratio 128 (field notes: kv-block-256).
DSV4_COMPRESS_RATIO = 128
# The runtimes rules below were measured on; each finding names its own (Rule.runtime).
# The two-node DSpark recipe's image (field notes: dspark-k-block-5, spec-repetition-penalty).
DSPARK_LEGACY_IMAGE = "the dspark-legacy image (vLLM 0.21.1rc1 + B12X)"
# The two-node port write-up (report 000 part 2; field notes: kv-block-256).
DSV4_PORT = "a vLLM 0.27.1 port with SM120 decode kernels"


def _honours(cluster: Cluster, setting: str) -> bool:
    """Whether the cluster's engine has a flag for this `[profile]` key."""
    return (
        cluster.engine is not None
        and setting not in adapter_for(cluster.engine.kind).unsupported_settings
    )


def _jit_caches(cluster: Cluster) -> tuple[tuple[str, str], ...]:
    return () if cluster.engine is None else adapter_for(cluster.engine.kind).jit_caches


@rule(
    "dspark-k",
    f"k ≤ 5 for DSpark on {DSPARK_LEGACY_IMAGE}, whose DSpark branch pins the draft block to "
    "dspark_block_size = 5 (k = 7 and k = 10 measured failing); a speculative.runtime left unset "
    "is judged as that image. Stock vLLM takes method dspark too (every release in "
    "engines/vllm/knowledge/), but no report measured it above k = 5; runtime = anemll is exempt",
    "docs/field-notes.md#dspark-k-block-5",
    runtime=DSPARK_LEGACY_IMAGE,
)
def dspark_k(cluster: Cluster, profile: ServingProfile, key: str) -> list[LintFinding]:
    spec = profile.speculative
    if spec is None or spec.method != "dspark" or spec.runtime == "anemll":
        return []
    k = spec.num_speculative_tokens
    # the report states "k ≤ 5 or a multiple of 5" but measured k = 10 failing like k = 7, so
    # only k ≤ 5 is known to work on that image (field notes: dspark-k-block-5)
    if k <= DSPARK_BLOCK_WIDTH:
        return []
    measured = "k = 10 was measured failing the same way" if k % DSPARK_BLOCK_WIDTH == 0 else ""
    return [
        LintFinding(
            "dspark-k",
            "error",
            f"{key}.speculative.num_speculative_tokens",
            f"k = {k} for DSpark on {DSPARK_LEGACY_IMAGE} (what an unset speculative.runtime "
            "means): the draft hardcodes a block width of 5, so the boot guard rejects it or the "
            "first generation crashes (tensor a (7) vs b (5))"
            + (f"; a multiple of 5 is no way out: {measured}" if measured else "")
            + "; stock vLLM's dspark method was not measured above k = 5",
            "use k ≤ 5, or set speculative.runtime = 'anemll' on the anemll image",
            "docs/field-notes.md#dspark-k-block-5",
        )
    ]


@rule(
    "spec-repetition-penalty",
    f"no repetition_penalty on the speculative path (a crash risk on {DSPARK_LEGACY_IMAGE}'s "
    "DSpark path; other runtimes and methods unmeasured)",
    "docs/field-notes.md#spec-repetition-penalty",
    runtime=DSPARK_LEGACY_IMAGE,
)
def spec_repetition_penalty(
    cluster: Cluster, profile: ServingProfile, key: str
) -> list[LintFinding]:
    if profile.speculative is None or "repetition_penalty" not in profile.generation_overrides:
        return []
    return [
        LintFinding(
            "spec-repetition-penalty",
            "error",
            f"{key}.generation_overrides",
            "a server-side repetition_penalty on the speculative-decoding path is a documented "
            f"crash risk (illegal memory access) on {DSPARK_LEGACY_IMAGE}, and it does not fix "
            "garble",
            "remove repetition_penalty from generation_overrides",
            "docs/field-notes.md#spec-repetition-penalty",
        )
    ]


@rule(
    "reasoning-none-with-thinking",
    "reasoning_effort none never meets thinking on",
    "docs/field-notes.md#reasoning-none-thinking",
)
def reasoning_none_with_thinking(
    cluster: Cluster, profile: ServingProfile, key: str
) -> list[LintFinding]:
    # read as the server reads it: either family's switch, an effort inside the kwargs too
    effort = profile.default_reasoning_effort
    clients = {"reasoning_effort": effort} if effort is not None else {}
    if not thinking_asked(clients, profile.default_chat_template_kwargs).none_with_thinking:
        return []
    return [
        LintFinding(
            "reasoning-none-with-thinking",
            "error",
            f"{key}.default_reasoning_effort",
            "reasoning_effort 'none' with thinking on: on the report's runtime a chat-mode "
            "prompt met a thinking-armed parser and the whole reply landed in reasoning, content "
            "null (4/4 measured); vLLM 0.26.0 answers without thinking, in content (replayed), "
            "so no runtime gives the thinking the default asks for",
            "drop reasoning_effort 'none', or turn thinking off",
            "docs/field-notes.md#reasoning-none-thinking",
        )
    ]


@rule(
    "thinking-switch-as-text",
    "a thinking switch in the server's default kwargs is a boolean, not text",
    "benchmarks/vllm_replay/README.md",
)
def thinking_switch_as_text(
    cluster: Cluster, profile: ServingProfile, key: str
) -> list[LintFinding]:
    # vLLM 0.26.0's renderers and parser read a switch by its truth: "false" thinks (replayed)
    return [
        LintFinding(
            "thinking-switch-as-text",
            "error",
            f"{key}.default_chat_template_kwargs.{name}",
            f"{name} = {value!r} is text: vLLM reads a thinking switch by its truth, so any "
            "non-empty text turns thinking on for every request that does not override it",
            f"write {name} as a TOML boolean (true or false)",
            "benchmarks/vllm_replay/README.md",
        )
        for name in SWITCH_KEYS
        if isinstance(value := profile.default_chat_template_kwargs.get(name), str)
    ]


@rule(
    "unified-memory-utilization",
    "GPU memory utilisation ≤ 0.80 on unified memory (≤ 0.85 warns: the evidence is mixed)",
    "docs/field-notes.md#unified-memory-080",
)
def unified_memory_utilization(
    cluster: Cluster, profile: ServingProfile, key: str
) -> list[LintFinding]:
    value, unset = profile.gpu_memory_utilization, profile.gpu_memory_utilization is None
    unified = cluster.engine is not None and cluster.engine.unified_memory
    if cluster.engine is not None and cluster.engine.device == "cpu":
        return []  # no GPU memory: its KV cache is cpu_kvcache_gib (lint vllm-cpu-layout)
    if value is None and cluster.engine is not None and cluster.engine.kind == "vllm":
        # unset means vLLM's own default for the release the file names (0.92 in all read)
        value = version_default(cluster.engine.target_version, "gpu_memory_utilization")
    if not unified or not isinstance(value, float) or value <= UNIFIED_MEMORY_MAX_UTILIZATION:
        return []
    # the evidence at 0.85 is mixed (one crash, one validated profile), so up to 0.85 it can only
    # warn; nothing above 0.85 ran in any report (field notes: unified-memory-080)
    severity: Literal["error", "warning"] = (
        "warning" if value <= UNIFIED_MEMORY_MIXED_EVIDENCE else "error"
    )
    said = "unset, so vLLM's default " if unset else ""
    return [
        LintFinding(
            "unified-memory-utilization",
            severity,
            f"{key}.gpu_memory_utilization",
            f"{said}{value:g} on unified memory (page cache and GPU share 128 GB): at 0.85 a "
            "worker died with NV_ERR_NO_MEMORY in one deployment, while another's validated C12 "
            "profile ran 0.85 on the same hardware; the safe value depends on what else holds "
            "memory" + ("" if severity == "warning" else ", and no report ran above 0.85"),
            f"use {UNIFIED_MEMORY_MAX_UTILIZATION:.2f} or less, and drop caches before launching",
            "docs/field-notes.md#unified-memory-080",
        )
    ]


@rule(
    "jit-cache-local",
    "JIT caches on node-local disk, not a shared filesystem",
    "docs/field-notes.md#jit-cache-node-local",
)
def jit_cache_local(cluster: Cluster, profile: ServingProfile, key: str) -> list[LintFinding]:
    caches = _jit_caches(cluster)
    if not caches or cluster.engine is None:
        return []
    shared = [PurePosixPath(p) for p in cluster.engine.shared_filesystems]
    candidates = {"engine.jit_cache_dir": cluster.engine.jit_cache_dir}
    cache_names = {name for name, _ in caches}
    candidates |= {f"env.{k}": v for k, v in cluster.env.items() if k in cache_names}
    for node in cluster.nodes:
        candidates |= {
            f"nodes.{node.name}.env.{k}": v for k, v in node.env.items() if k in cache_names
        }
    findings = []
    for where, path in candidates.items():
        under = next((m for m in shared if PurePosixPath(path).is_relative_to(m)), None)
        if under is not None:
            findings.append(
                LintFinding(
                    "jit-cache-local",
                    "error",
                    where,
                    f"{path} is on the shared filesystem {under}: ranks JIT into one tree and "
                    "corrupt "
                    "each other (FileExistsError, DeepGEMM runtime != nullptr, a foreign "
                    "sampling.so)",
                    "point it at node-local disk, e.g. /var/cache/sparkrig/jit; weights may stay "
                    "on "
                    "NFS",
                    "docs/field-notes.md#jit-cache-node-local",
                )
            )
    return findings


@rule(
    "dsv4-block-size",
    f"DeepSeek-V4 main KV store keeps block 256 (block 64 over the compress ratio 128 gave 0 on "
    f"{DSV4_PORT})",
    "docs/field-notes.md#kv-block-256",
    runtime=DSV4_PORT,
)
def dsv4_block_size(cluster: Cluster, profile: ServingProfile, key: str) -> list[LintFinding]:
    block = profile.block_size
    is_dsv4 = cluster.model is not None and "deepseek-v4" in cluster.model.path.lower()
    if not is_dsv4 or block is None or block % DSV4_COMPRESS_RATIO == 0:
        return []
    return [
        LintFinding(
            "dsv4-block-size",
            "error",
            f"{key}.block_size",
            f"block_size {block} on DeepSeek-V4: on {DSV4_PORT}, compressed-MLA storage is "
            f"block // 128 = {block // DSV4_COMPRESS_RATIO} (ZeroDivisionError at 64); the SM120 "
            "decode gate wants 64 only for the sliding-window cache, which keeps its own 64",
            "keep the main store at 256 and let SWA keep its own 64",
            "docs/field-notes.md#kv-block-256",
        )
    ]


@rule(
    "max-model-len-calibrated",
    "max_model_len within the calibrated context",
    "docs/field-notes.md#yarn-1m-ceiling",
)
def max_model_len_calibrated(
    cluster: Cluster, profile: ServingProfile, key: str
) -> list[LintFinding]:
    ceiling = cluster.model.calibrated_context if cluster.model else None
    length = profile.max_model_len
    if ceiling is None or length is None or length <= ceiling:
        return []
    return [
        LintFinding(
            "max-model-len-calibrated",
            "error",
            f"{key}.max_model_len",
            f"{length} is past the model's calibrated {ceiling} tokens (YaRN ceiling): it boots "
            "(VLLM_ALLOW_LONG_MAX_MODEL_LEN), but output past the ceiling is not coherent",
            f"use max_model_len = {ceiling}",
            "docs/field-notes.md#yarn-1m-ceiling",
        )
    ]


@rule(
    "kv-pool-holds-one-request",
    "the KV pool holds one full-length request",
    "docs/field-notes.md#kv-pool-shared",
)
def kv_pool_holds_one_request(
    cluster: Cluster, profile: ServingProfile, key: str
) -> list[LintFinding]:
    pool, length = profile.kv_pool_tokens, profile.max_model_len
    if pool is None or length is None or pool >= length:
        return []
    return [
        LintFinding(
            "kv-pool-holds-one-request",
            "error",
            f"{key}.kv_pool_tokens",
            f"a KV pool of {pool} tokens cannot hold one {length}-token request (sum of live "
            "tokens ≤ pool); the advertised context is unreachable",
            f"raise gpu_memory_utilization (within the unified-memory limit), add nodes, or lower "
            f"max_model_len to ≤ {pool}",
            "docs/field-notes.md#kv-pool-shared, docs/field-notes.md#kv-pool-short-of-1m",
        )
    ]


@rule(
    "bench-no-stream-chunks",
    "benchmarks count tokens, not stream chunks",
    "docs/field-notes.md#stream-chunks-not-tokens",
)
def bench_no_stream_chunks(
    cluster: Cluster, profile: ServingProfile, key: str
) -> list[LintFinding]:
    if not profile.bench_streaming_chunk_counts:
        return []
    under = "by the acceptance length" if profile.speculative else "whenever a chunk holds >1"
    return [
        LintFinding(
            "bench-no-stream-chunks",
            "error",
            f"{key}.bench_streaming_chunk_counts",
            f"streamed chunks are not tokens: vLLM sends one chunk per decode step, so counting "
            f"them measures steps/s and under-reports {under}",
            "benchmark with usage token counts (sparkrig bench does), or stream: false",
            "docs/field-notes.md#stream-chunks-not-tokens",
        )
    ]
