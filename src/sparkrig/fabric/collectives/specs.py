"""Each collective's facts in one place, as nccl-tests keeps them in its per-collective struct:
the bus factor (busBw / algBw, nccl-tests `doc/PERFORMANCE.md`), which buffer a ladder size
counts, the built-in and sparkrig implementations, and the result every rank must see.

Importable without torch: the implementations import it when they run (the worker's side).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sparkrig.errors import UsageError

if TYPE_CHECKING:
    import torch

    from sparkrig.fabric.collectives.execute import Transport

Implementation = Callable[["torch.Tensor", int, "Transport"], "torch.Tensor"]
"""(this rank's input, ranks, transport) -> this rank's output"""
Reference = Callable[[list["torch.Tensor"], int], "torch.Tensor"]
"""(every rank's input, this rank) -> what this rank's output must be"""


@dataclass(frozen=True)
class CollectiveSpec:
    name: str
    bus_factor: Callable[[int], float]
    """busBw / algBw for n ranks: the share of the counted buffer each rank's links carry"""
    counts_output: bool
    """the ladder size counts the output (all-gather: n inputs), not one rank's input"""
    input_split: bool
    """the input is cut into one block per rank, so its element count is a multiple of n"""
    builtin: Implementation | None
    """torch.distributed's own; None where the fabric test does not run the collective"""
    sparkrig: Implementation | None
    """neighbour-only, relayed by sparkrig's schedules"""
    reference: Reference | None

    def elements(self, size_bytes: int, ranks: int, itemsize: int) -> int:
        """Per-rank input elements for a ladder size. Rounded down so every rank's share is
        whole (at least one element)."""
        total = max(size_bytes // itemsize // ranks, 1) * ranks
        return total // ranks if self.counts_output else total

    def implementations(self) -> dict[str, Implementation]:
        """By the names receipts use (`IMPLEMENTATIONS`): the ones this collective has."""
        both = {"builtin": self.builtin, "sparkrig": self.sparkrig}
        return {name: run for name, run in both.items() if run is not None}


def _share(ranks: int) -> float:
    return (ranks - 1) / ranks


def _twice_share(ranks: int) -> float:
    return 2 * (ranks - 1) / ranks


def _one(ranks: int) -> float:
    del ranks
    return 1.0


def _sum(inputs: list[torch.Tensor]) -> torch.Tensor:
    total = inputs[0].clone()
    for other in inputs[1:]:
        total = total + other
    return total


# --- the built-in implementations (torch.distributed) ----------------------------------------


def _builtin_all_reduce(x: torch.Tensor, ranks: int, transport: Transport) -> torch.Tensor:
    import torch.distributed as dist

    out = x.clone()
    dist.all_reduce(out)
    return out


def _builtin_all_gather(x: torch.Tensor, ranks: int, transport: Transport) -> torch.Tensor:
    import torch.distributed as dist

    out = x.new_empty(x.numel() * ranks)
    dist.all_gather_into_tensor(out, x)
    return out


def _builtin_reduce_scatter(x: torch.Tensor, ranks: int, transport: Transport) -> torch.Tensor:
    import torch.distributed as dist

    out = x.new_empty(x.numel() // ranks)
    dist.reduce_scatter_tensor(out, x)
    return out


def _builtin_all_to_all(x: torch.Tensor, ranks: int, transport: Transport) -> torch.Tensor:
    import torch
    import torch.distributed as dist

    out = torch.empty_like(x)
    dist.all_to_all_single(out, x)
    return out


# --- sparkrig's neighbour-only implementations -----------------------------------------------


def _sparkrig_all_reduce(x: torch.Tensor, ranks: int, transport: Transport) -> torch.Tensor:
    from sparkrig.fabric.collectives import execute

    return execute.all_reduce(x, transport)


def _sparkrig_all_gather(x: torch.Tensor, ranks: int, transport: Transport) -> torch.Tensor:
    from sparkrig.fabric.collectives import execute

    return execute.all_gather(x, x.numel() * ranks, transport)


def _sparkrig_reduce_scatter(x: torch.Tensor, ranks: int, transport: Transport) -> torch.Tensor:
    from sparkrig.fabric.collectives import execute

    return execute.reduce_scatter(x, transport)


def _sparkrig_all_to_all(x: torch.Tensor, ranks: int, transport: Transport) -> torch.Tensor:
    import torch

    from sparkrig.fabric.collectives import execute

    return torch.cat(execute.all_to_all(list(x.view(ranks, -1).unbind(0)), transport))


# --- what every rank must see ----------------------------------------------------------------


def _all_reduce_result(inputs: list[torch.Tensor], rank: int) -> torch.Tensor:
    return _sum(inputs)


def _all_gather_result(inputs: list[torch.Tensor], rank: int) -> torch.Tensor:
    import torch

    return torch.cat(inputs)


def _reduce_scatter_result(inputs: list[torch.Tensor], rank: int) -> torch.Tensor:
    return _sum(inputs).view(len(inputs), -1)[rank]


def _all_to_all_result(inputs: list[torch.Tensor], rank: int) -> torch.Tensor:
    import torch

    return torch.cat([x.view(len(inputs), -1)[rank] for x in inputs])


SPECS: dict[str, CollectiveSpec] = {
    spec.name: spec
    for spec in (
        # every rank's links carry (n-1)/n of the tensor out to be reduced and again back
        CollectiveSpec(
            "all_reduce",
            _twice_share,
            counts_output=False,
            input_split=False,
            builtin=_builtin_all_reduce,
            sparkrig=_sparkrig_all_reduce,
            reference=_all_reduce_result,
        ),
        CollectiveSpec(
            "all_gather",
            _share,
            counts_output=True,
            input_split=False,
            builtin=_builtin_all_gather,
            sparkrig=_sparkrig_all_gather,
            reference=_all_gather_result,
        ),
        CollectiveSpec(
            "reduce_scatter",
            _share,
            counts_output=False,
            input_split=True,
            builtin=_builtin_reduce_scatter,
            sparkrig=_sparkrig_reduce_scatter,
            reference=_reduce_scatter_result,
        ),
        CollectiveSpec(
            "all_to_all",
            _share,
            counts_output=False,
            input_split=True,
            builtin=_builtin_all_to_all,
            sparkrig=_sparkrig_all_to_all,
            reference=_all_to_all_result,
        ),
        # the root's whole buffer reaches every rank, whatever n is: factor 1, not (n-1)/n.
        # Not run by the fabric test: sparkrig has no neighbour-only broadcast.
        CollectiveSpec(
            "broadcast",
            _one,
            counts_output=False,
            input_split=False,
            builtin=None,
            sparkrig=None,
            reference=None,
        ),
    )
}

COLLECTIVES = tuple(name for name, spec in SPECS.items() if spec.sparkrig is not None)
"""what the fabric test runs, in order"""


def spec_of(collective: str) -> CollectiveSpec:
    spec = SPECS.get(collective)
    if spec is None:
        raise UsageError(f"collective {collective!r} is not known — use one of {', '.join(SPECS)}")
    return spec
