"""Building the receipt from the workers' JSON lines (captured from a real two-rank run, see
tests/fixtures/README.md): a point needs every rank and takes the slowest; checks per rank;
counters of interfaces the plan does not know are not cable loads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sparkrig.config.loading import parse_cluster
from sparkrig.fabric.collectives.fabric_test import receipt_update
from sparkrig.fabric.collectives.results import FabricTestReceipt
from sparkrig.fabric.plan import plan_fabric

FIXTURES = Path(__file__).parents[1] / "fixtures" / "fabric_test"
PAIR = 'cables = ["a.p0 <-> b.p1"]\n[[nodes]]\nname = "a"\n[[nodes]]\nname = "b"\n'


def _events(rank: int) -> list[dict[str, Any]]:
    lines = (FIXTURES / f"worker-rank{rank}.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def _receipt() -> FabricTestReceipt:
    return FabricTestReceipt(
        cluster="pair",
        topology="pair-1-cable",
        rank_order=["a", "b"],
        executor="local",
        backend="gloo",
        iterations=2,
    )


def test_points_need_every_rank_and_take_the_slowest() -> None:
    plan = plan_fabric(parse_cluster(PAIR))
    events = {"a": _events(0), "b": _events(1)}
    receipt = receipt_update(_receipt(), plan, events)
    assert len(receipt.points) == 4 * 2 * 2
    for point in receipt.points:
        times = [
            e["seconds"]
            for node_events in events.values()
            for e in node_events
            if e["event"] == "point"
            and (e["collective"], e["implementation"], e["size_bytes"])
            == (point.collective, point.implementation, point.size_bytes)
        ]
        assert point.seconds == max(times)
    assert [(c.node, c.rank, c.passed, c.failed) for c in receipt.checks] == [
        ("a", 0, 96, []),
        ("b", 1, 96, []),
    ]
    assert receipt.cable_loads == []  # `lo` is no rail of the plan


def test_a_point_one_rank_has_not_reported_is_left_out() -> None:
    plan = plan_fabric(parse_cluster(PAIR))
    late = [e for e in _events(1) if not (e["event"] == "point" and e["size_bytes"] == 65536)]
    receipt = receipt_update(_receipt(), plan, {"a": _events(0), "b": late})
    assert {p.size_bytes for p in receipt.points} == {8192}
