"""Configuration semantics: what each key means together with the others, checked by `bgpadv check-config` (and by
every command that loads the file) as field errors with exit 2, or as warnings with exit 0.

Scope (configurations that parse but cannot work): a session to itself (`localAddress` equal to the peer's address, or
to another peer's); a `nextHopSelf` address that is a peer's (reported at both ends); reserved AS numbers (AS_TRANS
23456, RFC 6793; 65535 and 4294967295, RFC 7300; 0 is out of range) as errors and documentation AS numbers (RFC 5398) as
warnings; two import networks in one kernel table (the same `table`, or the same OVN-K VRF name); a loopback
`localAddress` toward a remote peer (no multihop); a link-local IPv6 peer or local address (no interface to bind to).
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from bgpadv.commands import checkconfig
from bgpadv.commands.cli import main
from bgpadv.config import ConfigError, parse

TOR = {"address": "10.0.0.1", "asn": 64512, "localAddress": "10.0.0.11"}
TOR2 = {"address": "10.0.0.2", "asn": 64512, "localAddress": "10.0.0.11"}


def config(**overrides: Any) -> dict:
    raw: dict[str, Any] = {"localASN": 64513, "peers": [dict(TOR), dict(TOR2)]}
    raw.update(overrides)
    return raw


def peer(**keys: Any) -> dict:
    return {**TOR, **keys}


def imports(*networks: dict) -> dict:
    return {"enabled": True, "networks": list(networks)}


LONG_A, LONG_B = "tenant-blue-production", "tenant-red-production"

ERRORS = [
    pytest.param(
        config(peers=[peer(localAddress="10.0.0.1")]),
        ["peers[0].localAddress: must not be the peer's own address 10.0.0.1 (a session to itself)"],
        id="local-address-is-the-peers-address",
    ),
    pytest.param(
        config(peers=[peer(address="fd00::1", localAddress="fd00::1")]),
        ["peers[0].localAddress: must not be the peer's own address fd00::1 (a session to itself)"],
        id="local-address-is-the-peers-address-ipv6",
    ),
    pytest.param(
        config(peers=[dict(TOR), {**TOR2, "localAddress": "10.0.0.1"}]),
        ["peers[1].localAddress: 10.0.0.1 is the address of peers[0], not ours"],
        id="local-address-is-another-peers-address",
    ),
    pytest.param(
        config(nextHopSelf={"ipv4": "10.0.0.2"}),
        [
            "nextHopSelf.ipv4: 10.0.0.2 is the address of peers[1]: a next hop must be ours",
            "peers[1].address: 10.0.0.2 is also nextHopSelf.ipv4, our own address",
        ],
        id="next-hop-self-is-a-peer-and-the-peer-is-next-hop-self",
    ),
    pytest.param(
        config(peers=[peer(address="fd00::1", localAddress="fd00::11")], nextHopSelf={"ipv6": "fd00::1"}),
        [
            "nextHopSelf.ipv6: fd00::1 is the address of peers[0]: a next hop must be ours",
            "peers[0].address: fd00::1 is also nextHopSelf.ipv6, our own address",
        ],
        id="next-hop-self-ipv6-is-a-peer",
    ),
    pytest.param(
        config(localASN=23456),
        [
            "localASN: 23456 is AS_TRANS (RFC 6793), which stands in for a 4-byte AS in a 2-byte field: it cannot be a "
            "BGP speaker's AS"
        ],
        id="local-as-trans",
    ),
    pytest.param(
        config(localASN=65535),
        ["localASN: 65535 is reserved (RFC 7300): it cannot be a BGP speaker's AS"],
        id="local-asn-65535",
    ),
    pytest.param(
        config(localASN=4294967295),
        ["localASN: 4294967295 is reserved (RFC 7300): it cannot be a BGP speaker's AS"],
        id="local-asn-4294967295",
    ),
    pytest.param(config(localASN=0), ["localASN: must be between 1 and 4294967295, got 0"], id="local-asn-0"),
    pytest.param(
        config(peers=[peer(asn=23456)]),
        [
            "peers[0].asn: 23456 is AS_TRANS (RFC 6793), which stands in for a 4-byte AS in a 2-byte field: it cannot "
            "be a BGP speaker's AS"
        ],
        id="peer-as-trans",
    ),
    pytest.param(
        config(peers=[peer(asn=65535)]),
        ["peers[0].asn: 65535 is reserved (RFC 7300): it cannot be a BGP speaker's AS"],
        id="peer-asn-65535",
    ),
    pytest.param(
        config(importRoutes=imports({"name": "vmnet-a", "table": 1001}, {"name": "vmnet-b", "table": 1001})),
        [
            "importRoutes.networks[1].table: table 1001 is also networks[0]'s ('vmnet-a'): two networks in one "
            "kernel table delete each other's routes on every reconcile"
        ],
        id="two-import-networks-one-table",
    ),
    pytest.param(
        config(
            importRoutes=imports(
                {"name": "ops", "external": True, "table": 2000},
                {"name": "vmnet-a"},
                {"name": "vmnet-b", "table": 2000},
            )
        ),
        [
            "importRoutes.networks[2].table: table 2000 is also networks[0]'s ('ops'): two networks in one "
            "kernel table delete each other's routes on every reconcile"
        ],
        id="a-cudn-in-an-external-networks-table",
    ),
    pytest.param(
        config(importRoutes=imports({"name": LONG_A, "networkID": 7}, {"name": LONG_B, "networkID": 7})),
        [
            f"importRoutes.networks[1].networkID: its VRF 'mp7-udn-vrf' is also networks[0]'s ('{LONG_A}'): two "
            "networks in one kernel table delete each other's routes on every reconcile"
        ],
        id="two-long-names-one-network-id-one-vrf",
    ),
    pytest.param(
        config(peers=[peer(localAddress="127.0.0.1")]),
        [
            "peers[0].localAddress: 127.0.0.1 is loopback: the peer 10.0.0.1 is remote and bgpadv speaks single-hop "
            "eBGP only (no multihop); use the address of the interface toward the peer"
        ],
        id="loopback-local-address-toward-a-remote-peer",
    ),
    pytest.param(
        config(peers=[peer(address="fd00::1", localAddress="::1")]),
        [
            "peers[0].localAddress: ::1 is loopback: the peer fd00::1 is remote and bgpadv speaks single-hop eBGP "
            "only (no multihop); use the address of the interface toward the peer"
        ],
        id="loopback-local-address-toward-a-remote-peer-ipv6",
    ),
    pytest.param(
        config(peers=[{"address": "fe80::1", "asn": 64512}]),
        [
            "peers[0].address: fe80::1 is link-local: a link-local peer needs the interface it is reached on: set "
            "`interface` (an unnumbered session), or use the peer's global or unique-local address"
        ],
        id="link-local-peer-without-an-interface",
    ),
    pytest.param(
        config(peers=[peer(address="fd00::1", localAddress="fe80::11")]),
        ["peers[0].localAddress: fe80::11 is link-local: it needs an interface bgpadv cannot configure"],
        id="link-local-local-address",
    ),
]


@pytest.mark.parametrize(("raw", "problems"), ERRORS)
def test_a_meaningless_combination_is_a_field_error(raw, problems):
    with pytest.raises(ConfigError) as e:
        parse(raw, {})
    assert e.value.problems == problems


@pytest.mark.parametrize(("raw", "problems"), ERRORS[:3])
def test_check_config_prints_each_problem_with_its_path_and_exits_2(tmp_path, capsys, raw, problems):
    path = tmp_path / "bgpadv.yaml"
    path.write_text(yaml.safe_dump(raw))
    assert main(["check-config", str(path)]) == 2
    assert capsys.readouterr().err.splitlines() == [f"{path}: {p}" for p in problems]


ACCEPTED = [
    pytest.param(config(), id="two-tors"),
    pytest.param(config(nextHopSelf={"ipv4": "10.0.0.11"}), id="next-hop-self-our-session-address"),
    pytest.param(config(peers=[peer(address="127.0.0.2", localAddress="127.0.0.1")]), id="loopback-to-loopback"),
    pytest.param(config(peers=[{"address": "169.254.0.1", "asn": 64512}]), id="ipv4-link-local-peer"),
    pytest.param(config(localASN=64512, peers=[peer(asn=64512)]), id="ibgp"),
    pytest.param(config(localASN=4200000000), id="four-byte-private-asn"),
    pytest.param(
        config(importRoutes=imports({"name": "vmnet-a", "table": 1001}, {"name": "vmnet-b", "table": 1002})),
        id="two-import-networks-two-tables",
    ),
    pytest.param(
        config(importRoutes=imports({"name": LONG_A, "networkID": 7}, {"name": LONG_B, "networkID": 8})),
        id="two-long-names-two-network-ids",
    ),
]


@pytest.mark.parametrize("raw", ACCEPTED)
def test_a_legitimate_combination_is_accepted(raw):
    parse(raw, {})


@pytest.mark.parametrize(
    ("raw", "warning"),
    [
        pytest.param(
            config(localASN=64496),
            "localASN 64496 is an AS number reserved for documentation (RFC 5398): no real network uses it; is this "
            "a copied example?",
            id="local-documentation-asn-16-bit",
        ),
        pytest.param(
            config(peers=[peer(asn=65551)]),
            "peers[0].asn 65551 is an AS number reserved for documentation (RFC 5398): no real network uses it; is "
            "this a copied example?",
            id="peer-documentation-asn-32-bit",
        ),
    ],
)
def test_a_documentation_asn_is_a_warning_and_check_config_exits_0(tmp_path, capsys, monkeypatch, raw, warning):
    monkeypatch.setattr(checkconfig, "exabgp_problems", lambda *a: [])
    assert warning in checkconfig.warnings(parse(raw, {}))
    path = tmp_path / "bgpadv.yaml"
    path.write_text(yaml.safe_dump(raw))
    assert main(["check-config", str(path)]) == 0
    assert f"{path}: warning: {warning}" in capsys.readouterr().err.splitlines()


@pytest.mark.parametrize("asn", [64495, 64512, 65552])
def test_neighbouring_asns_get_no_documentation_warning(asn):
    assert not any("RFC 5398" in w for w in checkconfig.warnings(parse(config(localASN=asn), {})))
