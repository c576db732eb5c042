"""Which CUDA-graph batch sizes vLLM captures, computed the way vLLM computes them.

vLLM (VllmConfig._set_cudagraph_sizes) lays a grid of 1, 2, 4, multiples of 8 below 256 and
multiples of 16 from 256, up to max_cudagraph_capture_size (default min(2 × max_num_seqs ×
(k+1), 512)) and never past max_num_batched_tokens, and cuts an explicit size down to the grid's
largest entry. With speculative decoding (FULL decode graphs, V1 model runner) it then rounds each
size up to a multiple of k+1 and drops those past that maximum
(CompilationConfig.adjust_cudagraph_sizes_for_spec_decode); none left is its "No valid cudagraph
sizes" error. The V2 model runner (which vLLM 0.26 forces for DSpark) builds its uniform-decode
graphs by the same round-up of the same grid, capped at that maximum and at max_num_seqs × (k+1)
(vllm/v1/worker/gpu/cudagraph_utils.py, `_init_candidates`), so the largest captured decode batch
is the same; it raises no "No valid cudagraph sizes" and captures no decode graph instead.
tests/lint/test_vllm_knowledge.py holds this function to vLLM's own answers for every grid point
of every release in `knowledge/`.
"""

from __future__ import annotations

from dataclasses import dataclass

from sparkrig import defaults

GRID_STEP_SMALL, GRID_STEP_LARGE, GRID_LARGE_FROM = 8, 16, 256
DEFAULT_CAPTURE_CEILING = 512


@dataclass(frozen=True)
class Captured:
    sizes: tuple[int, ...]  # empty: vLLM refuses to start ("No valid cudagraph sizes")

    @property
    def largest(self) -> int:
        return self.sizes[-1] if self.sizes else 0


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def grid(max_size: int) -> list[int]:
    sizes = [i for i in (1, 2, 4) if i <= max_size]
    if max_size >= GRID_STEP_SMALL:
        sizes += range(GRID_STEP_SMALL, min(max_size + 1, GRID_LARGE_FROM), GRID_STEP_SMALL)
    if max_size >= GRID_LARGE_FROM:
        sizes += range(GRID_LARGE_FROM, max_size + 1, GRID_STEP_LARGE)
    return sizes


def captured_sizes(
    max_num_seqs: int,
    k: int,
    explicit: int | None,
    max_num_batched_tokens: int,
    *,
    appends_decode_sizes: bool = False,
    appends_plain_decode_size: bool = False,
) -> Captured:
    """`appends_decode_sizes`: vLLM 0.29 and later add, when no size is given, every request
    count of the grid times k+1 (so each uniform decode batch has its graph);
    `appends_plain_decode_size`: 0.32 and 0.33 add max_num_seqs itself without speculation
    (0.30 does not; 0.31 was not read)."""
    query = k + 1
    default = min(max_num_seqs * query * 2, DEFAULT_CAPTURE_CEILING)
    decode_sizes: list[int] = []
    if explicit is None and appends_decode_sizes and query > 1:
        requests = min(max_num_seqs, DEFAULT_CAPTURE_CEILING)
        counts = [*grid(requests), requests]
        decode_sizes = [n * query for n in counts if n * query <= default]
    elif explicit is None and appends_plain_decode_size and max_num_seqs <= default:
        decode_sizes = [max_num_seqs]
    ceiling = min(max_num_batched_tokens, default if explicit is None else explicit)
    sizes = grid(ceiling) + [s for s in decode_sizes if s <= ceiling]
    if max_num_batched_tokens <= ceiling:
        sizes.append(max_num_batched_tokens)
    sizes = sorted(set(sizes))
    if query <= 1 or not sizes:
        return Captured(tuple(sizes))
    largest = sizes[-1]
    rounded = sorted({_round_up(s, query) for s in sizes if _round_up(s, query) <= largest})
    if not rounded and query <= largest:
        rounded = [query]
    return Captured(tuple(rounded))


def full_verify_batch(max_num_seqs: int, k: int) -> int:
    """Tokens in one decode step with every sequence verifying k drafts: max_num_seqs × (k+1)."""
    return max_num_seqs * (k + 1)


def covering_capture_size(max_num_seqs: int, k: int, max_num_batched_tokens: int) -> int:
    """The smallest explicit size on vLLM's own grid whose captured graphs hold a full verify
    batch (6 sequences, k = 5: 40, where 36 would be cut to 32 and capture only 24)."""
    full = full_verify_batch(max_num_seqs, k)
    for size in grid(max(full, DEFAULT_CAPTURE_CEILING) * 2):
        if (
            size >= full
            and captured_sizes(max_num_seqs, k, size, max_num_batched_tokens).largest >= full
        ):
            return size
    return full


def derived_capture_size(
    max_num_seqs: int | None, k: int | None, explicit: int | None, batched: int | None
) -> int | None:
    """What sparkrig renders as --max-cudagraph-capture-size: the profile's value, else (with
    speculative decoding and a max_num_seqs) the covering size above, else nothing."""
    if explicit is not None:
        return explicit
    if k is None or max_num_seqs is None:
        return None
    return covering_capture_size(max_num_seqs, k, batched or defaults.VLLM_MAX_NUM_BATCHED_TOKENS)
