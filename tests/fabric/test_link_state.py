"""`fabric test` checks every cable interface before it starts a worker. Without it, a cable
pulled out at one end surfaced as gloo's raw 'connect: Network is unreachable' on one rank (the
twin's pair, tests/journey/test_journey_faults.py). The `ip -j link show` lines below were
captured from veth pairs in a network namespace (iproute2 6.1, Debian 12)."""

from __future__ import annotations

import json

from sparkrig.config.loading import parse_cluster
from sparkrig.fabric.link_state import cable_problems
from sparkrig.fabric.plan import plan_fabric
from tests.fabric.netns_lab import cluster_toml

CARRYING = (
    '{"ifindex":3,"link":"xp0a","ifname":"p0a","flags":["BROADCAST","MULTICAST","UP",'
    '"LOWER_UP"],"mtu":1500,"qdisc":"noqueue","operstate":"UP","linkmode":"DEFAULT",'
    '"group":"default","txqlen":1000,"link_type":"ether","address":"92:0f:0e:fa:d8:bd",'
    '"broadcast":"ff:ff:ff:ff:ff:ff"}'
)
NO_CARRIER = (  # up here, the other end down: the cable pulled out at the far node
    '{"ifindex":5,"link":"xp0b","ifname":"p0b","flags":["NO-CARRIER","BROADCAST","MULTICAST",'
    '"UP","M-DOWN"],"mtu":1500,"qdisc":"noqueue","operstate":"LOWERLAYERDOWN","linkmode":'
    '"DEFAULT","group":"default","txqlen":1000,"link_type":"ether","address":'
    '"7e:21:c8:71:16:1e","broadcast":"ff:ff:ff:ff:ff:ff"}'
)
DOWN = (
    '{"ifindex":3,"link":"xp0a","ifname":"p0a","flags":["BROADCAST","MULTICAST"],"mtu":1500,'
    '"qdisc":"noqueue","operstate":"DOWN","linkmode":"DEFAULT","group":"default","txqlen":1000,'
    '"link_type":"ether","address":"92:0f:0e:fa:d8:bd","broadcast":"ff:ff:ff:ff:ff:ff"}'
)
PLAN = plan_fabric(parse_cluster(cluster_toml("pair", ["a", "b"], ["a.p0 <-> b.p1"])))


def _named(*links: str) -> list[str]:
    return cable_problems(PLAN, "a", "[" + ",".join(links) + "]")


def test_carrying_interfaces_pass() -> None:
    carrying_b = json.loads(NO_CARRIER) | {"flags": ["UP", "LOWER_UP"], "operstate": "UP"}
    assert _named(CARRYING, json.dumps(carrying_b)) == []


def test_down_no_carrier_and_missing_are_each_named_with_their_cable() -> None:
    assert _named(DOWN, NO_CARRIER) == [
        "a p0a (cable to b): down",
        "a p0b (cable to b): no carrier",
    ]
    assert _named(CARRYING) == ["a p0b (cable to b): no such interface"]


def test_output_that_is_not_json_or_not_links_is_named_not_raised() -> None:
    assert cable_problems(PLAN, "a", "Device not found") == ["a: `ip -j link show` printed no JSON"]
    assert len(cable_problems(PLAN, "a", '[1, "x", {"ifname": 7}]')) == 2
