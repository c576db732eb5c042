"""`lint` and `plan-capacity` with `--server URL`: the KV pool the running server has this boot
replaces the file's `kv_pool_tokens` in the profile checked (the one served: `--profile`, or
`[profile]`)."""

from __future__ import annotations

import asyncio

from sparkrig.config.cluster import Cluster


def with_server_pool(cluster: Cluster, profile: str | None, server: str) -> tuple[Cluster, str]:
    """The cluster with the live pool in the chosen profile, and a note saying so."""
    from sparkrig.client.live_kv_pool import live_kv_pool

    tokens, where = asyncio.run(live_kv_pool(server))
    chosen = cluster.chosen_profile(profile)
    before = chosen.kv_pool_tokens
    updated = chosen.model_copy(update={"kv_pool_tokens": tokens})
    if profile is None:
        cluster = cluster.model_copy(update={"profile": updated})
    else:
        cluster = cluster.model_copy(update={"profiles": {**cluster.profiles, profile: updated}})
    said = "no kv_pool_tokens" if before is None else f"kv_pool_tokens = {before:,}"
    return cluster, f"KV pool from the server: {tokens:,} tokens ({where}); the file has {said}"
