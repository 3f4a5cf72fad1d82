"""The import policy (bgpadv.importer.policy, pure): which learned routes a network's table gets, with what next
hops. Default policy: only the default routes; never a destination inside the network's own subnets; every peer's
path counts as equal (ECMP); at most `maxRoutes` per network and family, the shortest first."""

from __future__ import annotations

from bgpadv.config import AcceptRule, ImportNetwork, parse
from bgpadv.core.prefix import Address, Prefix
from bgpadv.importer.policy import LIMIT, NEXT_HOP, OWN_SUBNET, POLICY, desired_routes

TOR1, TOR2 = "10.0.0.1", "10.0.0.2"
SUBNET = [Prefix.parse("192.168.100.0/24")]


def n(text: str) -> Prefix:
    return Prefix.parse(text)


def a(text: str) -> Address:
    return Address.parse(text)


def rule(prefix: str, max_length: int | None = None, peers: tuple[str, ...] = ()) -> AcceptRule:
    """An accept rule as the configuration holds it."""
    return AcceptRule(Prefix.parse(prefix), max_length, tuple(Address.parse(p) for p in peers))


def test_the_default_policy_imports_only_the_default_routes():
    learned = {TOR1: {n("0.0.0.0/0"): a(TOR1), n("198.51.100.0/24"): a(TOR1), n("10.1.0.0/16"): a(TOR1)}}
    out = desired_routes(learned, ImportNetwork("vmnet-a"), SUBNET, 1000)
    assert out.routes == {n("0.0.0.0/0"): frozenset({a(TOR1)})}
    assert out.refused == {POLICY: 2}


def test_the_same_prefix_from_two_peers_is_one_route_with_both_next_hops():
    learned = {TOR1: {n("0.0.0.0/0"): a(TOR1)}, TOR2: {n("0.0.0.0/0"): a(TOR2)}}
    out = desired_routes(learned, ImportNetwork("vmnet-a"), SUBNET, 1000)
    assert out.routes == {n("0.0.0.0/0"): frozenset({a(TOR1), a(TOR2)})}


def test_a_destination_inside_the_networks_own_subnets_is_never_imported():
    rules = (rule("0.0.0.0/0", 32),)
    learned = {TOR1: {n("192.168.100.0/25"): a(TOR1), n("192.168.100.10/32"): a(TOR1), n("0.0.0.0/0"): a(TOR1)}}
    out = desired_routes(learned, ImportNetwork("vmnet-a", accept=rules), SUBNET, 1000)
    assert out.routes == {n("0.0.0.0/0"): frozenset({a(TOR1)})}
    assert out.refused == {OWN_SUBNET: 2}


def test_a_rule_limited_to_one_peer_and_a_maximum_length_takes_only_those():
    rules = (rule("198.51.100.0/24", 28, (TOR1,)),)
    learned = {
        TOR1: {n("198.51.100.0/24"): a(TOR1), n("198.51.100.16/28"): a(TOR1), n("198.51.100.1/32"): a(TOR1)},
        TOR2: {n("198.51.100.0/24"): a(TOR2)},
    }
    out = desired_routes(learned, ImportNetwork("vmnet-a", accept=rules), SUBNET, 1000)
    assert out.routes == {n("198.51.100.0/24"): frozenset({a(TOR1)}), n("198.51.100.16/28"): frozenset({a(TOR1)})}
    assert out.refused == {POLICY: 2}


def test_a_next_hop_of_the_other_family_or_none_is_refused():
    rules = (rule("::/0"), rule("0.0.0.0/0"))
    learned = {TOR1: {n("::/0"): a(TOR1), n("0.0.0.0/0"): None}}
    out = desired_routes(learned, ImportNetwork("vmnet-a", accept=rules), SUBNET, 1000)
    assert out.routes == {}
    assert out.refused == {NEXT_HOP: 2}


def test_over_the_limit_the_shortest_prefixes_stay_and_the_rest_is_refused():
    rules = (rule("0.0.0.0/0", 32),)
    learned = {TOR1: {n("0.0.0.0/0"): a(TOR1), n("10.0.0.0/8"): a(TOR1), n("10.1.0.0/16"): a(TOR1)}}
    out = desired_routes(learned, ImportNetwork("vmnet-a", accept=rules), [], 2)
    assert set(out.routes) == {n("0.0.0.0/0"), n("10.0.0.0/8")}
    assert out.refused == {LIMIT: 1}


def test_the_configuration_lists_networks_with_the_default_policy_unless_accept_is_given():
    config = parse(
        {
            "localASN": 64513,
            "peers": [{"address": TOR1, "asn": 64512}],
            "importRoutes": {
                "enabled": True,
                "maxRoutes": 50,
                "networks": [
                    {"name": "vmnet-a"},
                    {"name": "tenant-blue-production", "networkID": 7},
                    {"name": "storage", "external": True, "table": 2000, "exclude": ["10.50.0.0/16"]},
                    {"name": "edge", "table": 1001, "accept": [{"prefix": "198.51.100.0/24", "peers": [TOR1]}]},
                ],
            },
        }
    )
    imp = config.import_routes
    assert imp.enabled and imp.max_routes == 50 and imp.reconcile_seconds == 10.0
    assert [x.prefix for x in imp.networks[0].accept] == [Prefix.parse("0.0.0.0/0"), Prefix.parse("::/0")]
    assert imp.networks[1].network_id == 7
    assert imp.networks[2].external and imp.networks[2].exclude == (Prefix.parse("10.50.0.0/16"),)
    assert imp.networks[3].accept == (rule("198.51.100.0/24", None, (TOR1,)),)


def test_import_is_off_by_default_and_bad_entries_are_named():
    base = {"localASN": 64513, "peers": [{"address": TOR1, "asn": 64512}]}
    assert not parse(base).import_routes.enabled
    bad = {
        "networks": [
            {"name": "x", "external": True},
            {"name": "y", "table": 254},
            {"name": "z", "accept": [{"prefix": "10.0.0.1/8"}, {"prefix": "10.0.0.0/8", "peers": ["10.9.9.9"]}]},
        ]
    }
    try:
        parse({**base, "importRoutes": bad})
    except ValueError as e:
        problems = e.problems  # type: ignore[attr-defined]
    else:
        raise AssertionError("accepted")
    assert problems == [
        "importRoutes.networks[0].table: is required for an external network",
        "importRoutes.networks[1].table: must not be the default, main or local table",
        "importRoutes.networks[2].accept[0].prefix: must be a CIDR with no host bits, got '10.0.0.1/8'",
        "importRoutes.networks[2].accept[1].peers[0]: must be a configured peer's address, got '10.9.9.9'",
    ]
