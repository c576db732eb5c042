"""Bench two servers in alternating rounds, so both are measured in the same minutes.

On a shared machine a point's round means drift by more than the changes worth finding (16%
between passes minutes apart here, docs/metrics.md#paired-rounds): two separate runs cannot
resolve a 10% slowdown. Running round 1 on A, round 1 on B, round 2 on A, ... puts each of A's
rounds next to one of B's, and compare judges the per-round ratios, in which the drift cancels.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable
from pathlib import Path

from sparkrig.bench.client_shards import ShardedSender
from sparkrig.bench.point import BenchSettings
from sparkrig.bench.point_result import PointResult
from sparkrig.bench.receipt import BenchReceipt, save_receipt
from sparkrig.bench.run import check_suites, measure_round, open_side
from sparkrig.client import EndpointClient
from sparkrig.client.probe import first_model_id
from sparkrig.errors import EndpointError, UsageError


def paired_path(out_path: Path) -> Path:
    """The second server's receipt beside the first: bench.json -> bench-paired.json."""
    return out_path.with_name(f"{out_path.stem}-paired{out_path.suffix}")


def check_paired_paths(out_path: Path, paired_out_path: Path) -> None:
    if out_path.resolve() == paired_out_path.resolve():
        raise UsageError(
            f"--paired-out {paired_out_path} is the --out receipt — give each server its own "
            "file (or leave --paired-out out: it defaults to <out>-paired)"
        )


async def _reachable_model(client: EndpointClient, model: str | None, flag: str) -> str:
    """The model this server would be benched on; its failure names which server it was."""
    try:
        listed = await first_model_id(client)
    except EndpointError as exc:
        raise EndpointError(f"{flag}: {exc}") from exc
    return model or listed


async def run_paired_bench(
    base_url: str,
    paired_url: str,
    *,
    suites: list[str],
    settings: BenchSettings,
    out_path: Path,
    paired_out_path: Path,
    model: str | None = None,
    api_key: str | None = None,
    on_progress: Callable[[PointResult], None] = lambda _: None,
    on_plan: Callable[[int], None] = lambda _: None,
    on_point_done: Callable[[PointResult], None] = lambda _: None,
) -> tuple[BenchReceipt, BenchReceipt]:
    """Both receipts, sharing one pairing id; rounds alternate A, B, A, B, ...

    Both servers are asked for their model before anything is measured or written, so an
    unreachable one fails at once. When either side stops (its first point gave no sample),
    both stop: a round of one side has no use without the other's."""
    check_suites(suites)
    check_paired_paths(out_path, paired_out_path)
    async with (
        EndpointClient(base_url, api_key=api_key) as client_a,
        EndpointClient(paired_url, api_key=api_key) as client_b,
        contextlib.AsyncExitStack() as senders,
    ):
        model_a = await _reachable_model(client_a, model, "the server")
        model_b = await _reachable_model(client_b, model, "--paired-with")
        if model_a != model_b:
            raise UsageError(
                f"the servers serve different models ({model_a!r}, {model_b!r}) and compare "
                "only judges one model — pass --model to bench the same one on both"
            )
        sides = []
        for client, path in ((client_a, out_path), (client_b, paired_out_path)):
            sender = ShardedSender(client, api_key=api_key, forced=settings.client_processes)
            send_all = await senders.enter_async_context(sender)
            sides.append(
                await open_side(
                    client,
                    suites=suites,
                    settings=settings,
                    out_path=path,
                    model=model_a,
                    send_all=send_all,
                )
            )
        pairing = str(uuid.uuid4())
        for side in sides:
            side.receipt.pairing = pairing
            save_receipt(side.receipt, side.out_path)
        on_plan(settings.rounds * sum(side.planned() for side in sides))
        going = True
        for round_index in range(1, settings.rounds + 1):
            for side in sides:
                going = await measure_round(side, round_index, on_progress, on_point_done)
                if not going:
                    break
            if not going:
                for side in sides:
                    side.receipt.warnings.append(
                        f"paired run stopped in round {round_index}: a server gave no sample"
                    )
                break
        for side in sides:
            side.receipt.close()
            save_receipt(side.receipt, side.out_path)
    return sides[0].receipt, sides[1].receipt
