"""KV pool math on the reports' numbers (field notes: kv-pool-per-boot, ds41-kv-capacity)."""

from __future__ import annotations

from sparkrig.config.capacity import plan_capacity
from sparkrig.recipes import load_recipe


def test_pair_recipe_pool_math() -> None:
    capacity = plan_capacity(load_recipe("dsv4-flash-0731-tp2-pair").profile, 13.8)
    assert capacity.full_length_requests == round(1_548_597 / 1_048_576, 2)
    assert capacity.tokens_per_sequence_at_max_seqs == 1_548_597 // 6
    assert capacity.tokens_per_step == 6
    assert capacity.decode_ceiling_tok_s is not None
    assert (
        capacity.decode_ceiling_tok_s == 82.8
    )  # 13.8 steps/s × 6 (field notes: steps-times-accepted)


def test_ring_recipe_matches_the_reported_multiple() -> None:
    capacity = plan_capacity(load_recipe("dsv41-flash-1017-tp4-ring").profile)
    assert (
        capacity.full_length_requests == 8.18
    )  # 8,580,566 KV tokens (field notes: ds41-kv-capacity)
    assert capacity.decode_ceiling_tok_s is None


def test_a_pool_smaller_than_one_request_is_noted() -> None:
    profile = load_recipe("dsv4-flash-0731-tp2-pair").profile.model_copy(
        update={"kv_pool_tokens": 1000}
    )
    assert "cannot hold one" in plan_capacity(profile).notes[0]
