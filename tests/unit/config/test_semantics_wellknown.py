"""Configuration semantics, third round: next hops, IPv4 in IPv6, well-known communities and community limits,
checked by `bgpadv check-config` (exit code and stderr lines) and by every command that loads the file.

Scope:
- `nextHopSelf` obeys the special-purpose table's next-hop column (loopback, "this network", reserved 240/4,
  link-local, NAT64, documentation, ...), as node addresses do; `networks.allowSpecialRanges` does not change that.
- IPv4-compatible IPv6 (`::a.b.c.d`, deprecated by RFC 4291 section 2.5.5.1) is refused for peer, local and
  nextHopSelf addresses, as IPv4-mapped IPv6 is (`::1` stays the IPv6 loopback).
- BLACKHOLE (RFC 7999), GRACEFUL_SHUTDOWN (RFC 8326), NO_EXPORT, NO_ADVERTISE, NO_EXPORT_SUBCONFED (RFC 1997) on
  every route (`attributes`, or a policy whose match takes every route of a kind) are field errors unless the same
  block lists them in `intendedWellKnownCommunities`; set by a narrower policy, or any other 65535:x community, a
  warning naming the RFC (exit 0).
- More communities than one attribute holds (16,383 standard, 5,461 large: 65,535 bytes, RFC 4271 section 4.3),
  counted as the worst case a route can carry after every policy that can match it adds its own, is a field error
  at the block that tips it; more than a 4,096-byte UPDATE holds (RFC 8654 aside) is a warning.
"""

from __future__ import annotations

from typing import Any, get_args

import pytest
import yaml

from bgpadv.commands import checkconfig
from bgpadv.commands.cli import main
from bgpadv.config import ConfigError, parse
from bgpadv.config import communities as well_known
from bgpadv.config.schema import WellKnownName

TOR = {"address": "10.0.0.1", "asn": 64512}


def config(**overrides: Any) -> dict:
    raw: dict[str, Any] = {"localASN": 64513, "peers": [dict(TOR)], "metrics": {"listen": "10.0.0.11:9179"}}
    raw.update(overrides)
    return raw


def standard(n: int, asn: int = 1) -> list[str]:
    return [f"{asn + i // 65536}:{i % 65536}" for i in range(n)]


def large(n: int, tag: int = 1) -> list[str]:
    return [f"{tag}:{i // 65536}:{i % 65536}" for i in range(n)]


def policy(name: str, match: dict | None = None, **actions: Any) -> dict:
    out: dict[str, Any] = {"name": name, "set": actions}
    if match is not None:
        out["match"] = match
    return out


ERRORS = [
    pytest.param(
        config(nextHopSelf={"ipv4": "127.0.0.1"}),
        "nextHopSelf.ipv4: 127.0.0.1 lies in loopback (127.0.0.0/8), never a next hop",
        id="next-hop-self-loopback",
    ),
    pytest.param(
        config(nextHopSelf={"ipv4": "0.0.0.7"}),
        "nextHopSelf.ipv4: 0.0.0.7 lies in unspecified or 'this network' (0.0.0.0/8), never a next hop",
        id="next-hop-self-this-network",
    ),
    pytest.param(
        config(nextHopSelf={"ipv4": "240.0.0.1"}),
        "nextHopSelf.ipv4: 240.0.0.1 lies in reserved (240.0.0.0/4), never a next hop",
        id="next-hop-self-reserved",
    ),
    pytest.param(
        config(nextHopSelf={"ipv4": "169.254.0.1"}),
        "nextHopSelf.ipv4: 169.254.0.1 lies in link-local (169.254.0.0/16), never a next hop",
        id="next-hop-self-v4-link-local",
    ),
    pytest.param(
        config(nextHopSelf={"ipv6": "fe80::1"}),
        "nextHopSelf.ipv6: fe80::1 lies in link-local (fe80::/10), never a next hop",
        id="next-hop-self-v6-link-local",
    ),
    pytest.param(
        config(nextHopSelf={"ipv6": "64:ff9b::a00:1"}),
        "nextHopSelf.ipv6: 64:ff9b::a00:1 lies in the NAT64 well-known prefix (64:ff9b::/96), never a next hop",
        id="next-hop-self-nat64",
    ),
    pytest.param(
        config(nextHopSelf={"ipv6": "2001:db8::11"}, networks={"allowSpecialRanges": ["documentation"]}),
        "nextHopSelf.ipv6: 2001:db8::11 lies in documentation (2001:db8::/32), never a next hop",
        id="next-hop-self-documentation-even-when-allowed-as-network-space",
    ),
    pytest.param(
        config(nextHopSelf={"ipv6": "2002:a00:1::1"}),
        "nextHopSelf.ipv6: 2002:a00:1::1 lies in 6to4 (2002::/16), never a next hop",
        id="next-hop-self-6to4",
    ),
    pytest.param(
        config(peers=[{**TOR, "address": "::10.0.0.1"}]),
        "peers[0].address: must not be an IPv4-compatible IPv6 address (::a.b.c.d, deprecated by RFC 4291 section "
        "2.5.5.1), got ::10.0.0.1 (write the IPv4 address)",
        id="peer-ipv4-compatible",
    ),
    pytest.param(
        config(peers=[{"address": "fd00::1", "asn": 64512, "localAddress": "::10.0.0.11"}]),
        "peers[0].localAddress: must not be an IPv4-compatible IPv6 address (::a.b.c.d, deprecated by RFC 4291 "
        "section 2.5.5.1), got ::10.0.0.11 (write the IPv4 address)",
        id="local-ipv4-compatible",
    ),
    pytest.param(
        config(nextHopSelf={"ipv6": "::10.0.0.11"}),
        "nextHopSelf.ipv6: must not be an IPv4-compatible IPv6 address (::a.b.c.d, deprecated by RFC 4291 section "
        "2.5.5.1), got ::10.0.0.11 (write the IPv4 address)",
        id="next-hop-self-ipv4-compatible",
    ),
    pytest.param(
        config(peers=[{**TOR, "address": "::ffff:10.0.0.1"}]),
        "peers[0].address: must not be an IPv4-mapped IPv6 address, got ::ffff:10.0.0.1 (write the IPv4 address)",
        id="peer-ipv4-mapped-still",
    ),
]
for _value, _w in (("65535:666", "BLACKHOLE (RFC 7999)"), ("65535:0", "GRACEFUL_SHUTDOWN (RFC 8326)"),
                   ("65535:65281", "NO_EXPORT (RFC 1997)"), ("65535:65282", "NO_ADVERTISE (RFC 1997)"),
                   ("65535:65283", "NO_EXPORT_SUBCONFED (RFC 1997)")):  # fmt: skip
    ERRORS.append(
        pytest.param(
            config(attributes={"communities": ["64513:100", _value]}),
            f"attributes.communities[1]: {_value} is {_w} and attributes puts it on every route of every peer",
            id=f"attributes-{_w.split()[0]}",
        )
    )
ERRORS += [
    pytest.param(
        config(policies=[policy("all", communities=["65535:65282"])]),
        "policies[0].set.communities[0]: 65535:65282 is NO_ADVERTISE (RFC 1997) and policy 'all', whose match takes "
        "every subnet and host route, puts it on every subnet and host route of every peer",
        id="policy-without-match",
    ),
    pytest.param(
        config(policies=[policy("vms", {"kinds": ["host"], "vmSelector": {}}, communities=["65535:666"])]),
        "policies[0].set.communities[0]: 65535:666 is BLACKHOLE (RFC 7999) and policy 'vms', whose match takes every "
        "host route, puts it on every host route of every peer",
        id="policy-empty-selector-is-everything",
    ),
    pytest.param(
        config(attributes={"communities": ["64513:100"], "intendedWellKnownCommunities": ["NO_EXPORT"]}),
        "attributes.intendedWellKnownCommunities[0]: lists NO_EXPORT, which communities does not set",
        id="intended-but-not-set",
    ),
    pytest.param(
        config(attributes={"communities": ["65535:65281"], "intendedWellKnownCommunities": ["no-export"]}),
        "attributes.intendedWellKnownCommunities[0]: ",
        id="intended-misspelt",
    ),
    pytest.param(
        config(attributes={"communities": standard(16_384)}),
        "attributes.communities: a subnet route this reaches carries up to 16,384 communities with attributes and "
        "every policy that can match it: one COMMUNITIES attribute holds at most 16,383 (65,535 bytes with the "
        "extended-length flag, RFC 4271 section 4.3), so the route could never be sent",
        id="attributes-over-16383",
    ),
    pytest.param(
        config(attributes={"largeCommunities": large(5_462)}),
        "attributes.largeCommunities: a subnet route this reaches carries up to 5,462 large communities",
        id="attributes-over-5461-large",
    ),
    pytest.param(
        config(
            attributes={"communities": standard(10_000)},
            policies=[
                policy("subnets", {"kinds": ["subnet"]}, communities=standard(5_000, asn=2)),
                policy("hosts", {"kinds": ["host"]}, communities=standard(5_000, asn=3)),
                policy("gold", {"networks": ["vmnet-a"]}, communities=standard(2_000, asn=4)),
            ],
        ),
        "policies[2].set.communities: a subnet route this reaches carries up to 17,000 communities",
        id="worst-case-after-policy-merges",
    ),
]


@pytest.mark.parametrize(("raw", "problem"), ERRORS)
def test_a_configuration_that_would_put_a_wrong_attribute_on_the_fabric_is_a_field_error(
    tmp_path, capsys, raw, problem
):
    with pytest.raises(ConfigError) as e:
        parse(raw, {})
    assert any(p.startswith(problem) for p in e.value.problems), e.value.problems
    path = tmp_path / "bgpadv.yaml"
    path.write_text(yaml.safe_dump(raw))
    assert main(["check-config", str(path)]) == 2
    assert any(line.startswith(f"{path}: {problem}") for line in capsys.readouterr().err.splitlines())


ACCEPTED = [
    pytest.param(config(nextHopSelf={"ipv4": "10.0.0.11", "ipv6": "fd00::11"}), id="next-hop-self-private"),
    pytest.param(config(nextHopSelf={"ipv4": "100.64.0.11"}), id="next-hop-self-shared-space"),
    pytest.param(config(peers=[{**TOR, "address": "::1"}]), id="ipv6-loopback-is-not-ipv4-compatible"),
    pytest.param(
        config(attributes={"communities": ["65535:65281"], "intendedWellKnownCommunities": ["NO_EXPORT"]}),
        id="intended-no-export-everywhere",
    ),
    pytest.param(
        config(
            policies=[
                policy("drain", communities=["65535:0"], intendedWellKnownCommunities=["GRACEFUL_SHUTDOWN"]),
            ]
        ),
        id="intended-graceful-shutdown-policy",
    ),
    pytest.param(config(attributes={"communities": standard(16_383)}), id="exactly-16383"),
    pytest.param(config(attributes={"largeCommunities": large(5_461)}), id="exactly-5461-large"),
    pytest.param(
        config(
            attributes={"communities": standard(10_000)},
            policies=[
                policy("subnets", {"kinds": ["subnet"]}, communities=standard(6_000, asn=2)),
                policy("hosts", {"kinds": ["host"]}, communities=standard(6_000, asn=3)),
            ],
        ),
        id="policies-that-never-meet-on-one-route",
    ),
    pytest.param(
        config(attributes={"communities": standard(10_000)}, policies=[policy("same", communities=standard(10_000))]),
        id="repeats-count-once",
    ),
]


@pytest.mark.parametrize("raw", ACCEPTED)
def test_a_legitimate_configuration_is_accepted(raw):
    parse(raw, {})


WARNINGS = [
    pytest.param(
        config(policies=[policy("rtbh", {"networks": ["vmnet-a"], "kinds": ["host"]}, communities=["65535:666"])]),
        "policies[0] (rtbh) sets 65535:666, BLACKHOLE (RFC 7999), on the routes it matches: receivers that honour it "
        "drop all traffic to the prefix; list BLACKHOLE in intendedWellKnownCommunities if that is meant",
        id="narrow-policy-blackhole",
    ),
    pytest.param(
        config(policies=[policy("p", {"networks": ["vmnet-a"]}, communities=["65535:65281"])]),
        "policies[0] (p) sets 65535:65281, NO_EXPORT (RFC 1997), on the routes it matches",
        id="narrow-policy-no-export",
    ),
    pytest.param(
        config(attributes={"communities": ["65535:7"]}),
        "attributes sets 65535:7, in the well-known range 65535:0-65535 (RFC 1997)",
        id="unnamed-well-known",
    ),
    pytest.param(
        config(attributes={"communities": standard(1_001)}),
        "attributes.communities: a subnet route this reaches carries up to 1,001 communities (4,004 bytes of "
        "COMMUNITIES) with attributes and every policy that can match it: it does not fit a 4,096-byte UPDATE unless "
        "the ToR and bgpadv negotiate extended messages (RFC 8654)",
        id="over-one-update",
    ),
]


@pytest.mark.parametrize(("raw", "warning"), WARNINGS)
def test_a_risky_but_possible_attribute_is_a_warning_and_exit_0(tmp_path, capsys, monkeypatch, raw, warning):
    monkeypatch.setattr(checkconfig, "exabgp_problems", lambda *a: [])
    path = tmp_path / "bgpadv.yaml"
    path.write_text(yaml.safe_dump(raw))
    assert main(["check-config", str(path)]) == 0
    lines = capsys.readouterr().err.splitlines()
    assert any(line.startswith(f"{path}: warning: {warning}") for line in lines), lines


def test_an_intended_well_known_community_raises_no_warning():
    raw = config(policies=[policy("p", {"networks": ["a"]}, communities=["65535:666"],
                                  intendedWellKnownCommunities=["BLACKHOLE"])])  # fmt: skip
    assert not any("65535:666" in w for w in checkconfig.warnings(parse(raw, {})))


def test_the_arithmetic_of_the_limits():
    assert well_known.MAX_COMMUNITIES == 16_383 and 16_383 * 4 <= 65_535 < 16_384 * 4
    assert well_known.MAX_LARGE_COMMUNITIES == 5_461 and 5_461 * 12 <= 65_535 < 5_462 * 12
    assert well_known.MAX_EXTENDED_COMMUNITIES == 8_191 and 8_191 * 8 <= 65_535 < 8_192 * 8
    assert get_args(WellKnownName) == well_known.NAMES


def test_the_json_schema_lists_the_intended_names():
    from bgpadv.config import json_schema

    text = yaml.safe_dump(json_schema())
    assert "intendedWellKnownCommunities" in text and "allowSpecialRanges" in text
