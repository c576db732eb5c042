"""Discovery: the pure link-to-cable step, and a 4-ring wired in a shuffled order rebuilt from
the wires inside network namespaces."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from sparkrig.cli import app
from sparkrig.config import load_cluster, parse_cluster
from sparkrig.errors import FabricError
from sparkrig.fabric.discover import cables_from_links, with_cables
from sparkrig.fabric.plan import plan_fabric
from tests.fabric.netns_lab import cluster_toml, netns_lab, why_netns_unavailable

UNAVAILABLE = why_netns_unavailable()


def _pair() -> str:
    return cluster_toml("d", ["a", "b"], [])


def test_links_become_cables_between_ports() -> None:
    cluster = parse_cluster(_pair())
    heard = {
        ("a", "p0a"): {("b", "p1a")},
        ("a", "p0b"): {("b", "p1b")},
        ("a", "p1a"): set(),
        ("b", "p1a"): {("a", "p0a")},
        ("b", "p1b"): {("a", "p0b")},
    }
    assert [str(c) for c in cables_from_links(cluster, heard)] == ["a.p0 <-> b.p1"]


def test_functions_of_one_port_facing_two_ports_is_an_error() -> None:
    cluster = parse_cluster(_pair())
    heard = {("a", "p0a"): {("b", "p1a")}, ("a", "p0b"): {("b", "p0b")}}
    with pytest.raises(FabricError, match=r"port a.p0 faces b.p0, b.p1 — one port takes one"):
        cables_from_links(cluster, heard)


def test_one_way_link_is_an_error() -> None:
    cluster = parse_cluster(_pair())
    with pytest.raises(FabricError, match=r"hears b\.p1 but not the other way round"):
        cables_from_links(cluster, {("a", "p0a"): {("b", "p1a")}})


def test_with_cables_replaces_or_inserts_the_section() -> None:
    cluster = parse_cluster(_pair())
    cables = cables_from_links(
        cluster, {("a", "p0a"): {("b", "p1a")}, ("b", "p1a"): {("a", "p0a")}}
    )
    text = _pair()
    replaced = with_cables(text, cables)
    assert parse_cluster(replaced).cables == cables
    without = text.replace("cables = []\n", "")
    assert parse_cluster(with_cables(without, cables)).cables == cables


@pytest.mark.skipif(UNAVAILABLE is not None, reason=UNAVAILABLE or "")
def test_discover_rebuilds_a_shuffled_ring4(tmp_path: Path) -> None:
    names = ["a", "b", "c", "d"]
    # physically a - c - b - d - a, with ports mixed up: nothing follows the labels
    wiring = [
        ("a", "p1", "c", "p0"),
        ("c", "p1", "b", "p1"),
        ("b", "p0", "d", "p0"),
        ("d", "p1", "a", "p0"),
    ]
    with netns_lab(names, wiring) as lab:
        cluster_file = tmp_path / "ring.toml"
        # the file lists a wrong ring: discover must not trust it
        wrong = ["a.p0 <-> b.p1", "b.p0 <-> c.p1", "c.p0 <-> d.p1", "d.p0 <-> a.p1"]
        kept = tmp_path / "dotfiles" / "ring.toml"  # a linked file, readable by its group only
        kept.parent.mkdir()
        kept.write_text(cluster_toml("ring", names, wrong))
        kept.chmod(0o640)
        cluster_file.symlink_to(kept)
        before = {name: lab.snapshot(name) for name in names}
        result = CliRunner().invoke(
            app,
            [
                "fabric",
                "discover",
                str(cluster_file),
                "--executor",
                "netns",
                "--netns-prefix",
                lab.prefix,
                "--write",
            ],
        )
        assert result.exit_code == 0, result.output
        assert cluster_file.is_symlink()  # rewritten where it lives, its mode kept
        assert kept.stat().st_mode & 0o777 == 0o640
        found = {
            frozenset(str(end) for end in (c.a, c.b)) for c in load_cluster(cluster_file).cables
        }
        expected = {frozenset((f"{a}.{pa}", f"{b}.{pb}")) for a, pa, b, pb in wiring}
        assert found == expected
        plan = plan_fabric(load_cluster(cluster_file))
        assert plan.topology == "ring-4"
        assert plan.rank_order == ["a", "d", "b", "c"]  # a's p0 leads to d
        for name in names:  # discovery left nothing behind
            assert lab.snapshot(name) == before[name]
