"""Nodes → `views.Node`: next-hop candidates and every address the node has, its connected networks, its default
pod subnets and its Layer3 host subnets per CUDN (OVN-K's node annotations); see `bgpadv.core.views`."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from bgpadv.core import reasons
from bgpadv.core.addressing import parse_address, parse_cidr
from bgpadv.core.bounded import describe
from bgpadv.core.model import ObjectRef
from bgpadv.core.prefix import Address, Prefix
from bgpadv.core.views import NEWEST, HostSubnet, Node, Problem
from bgpadv.sources.decode.fields import _json, _key_name, _labels, _list, _map, _str, _version

CUDN_PREFIX = "cluster_udn_"
NODE_SUBNETS_ANNOTATION = "k8s.ovn.org/node-subnets"
PRIMARY_IFADDR_ANNOTATION = "k8s.ovn.org/node-primary-ifaddr"
HOST_CIDRS_ANNOTATION = "k8s.ovn.org/host-cidrs"


def _address(value: object) -> Address | None:
    parsed = parse_address(value)
    return None if parsed is None else Address.of(parsed[0], parsed[1])


def _node_addresses(raw: Mapping, annotations: Mapping) -> tuple[tuple[Address, ...], tuple[Address, ...]]:
    """(next-hop candidates in source order, every address the node has): see `bgpadv.core.views`."""
    candidates: list[Address] = []
    every: list[Address] = []
    for entry in _list(_map(raw.get("status")).get("addresses")):
        if isinstance(entry, dict) and entry.get("type") in ("InternalIP", "ExternalIP"):
            a = _address(entry.get("address"))
            if a is not None:
                every.append(a)
                if entry.get("type") == "InternalIP":
                    candidates.append(a)
    ifaddr, _ok = _json(annotations, PRIMARY_IFADDR_ANNOTATION)
    if isinstance(ifaddr, dict):
        for name, version in (("ipv4", 4), ("ipv6", 6)):
            a = _address(ifaddr.get(name))
            if a is not None:
                every.append(a)
                if a.version == version:
                    candidates.append(a)
    host_cidrs, _ok = _json(annotations, HOST_CIDRS_ANNOTATION)
    for value in host_cidrs if isinstance(host_cidrs, list) else ():
        a = _address(value)
        if a is not None:
            every.append(a)
    return tuple(candidates), tuple(dict.fromkeys(every))


def _node_space(annotations: Mapping) -> tuple[tuple[Prefix, ...], tuple[Prefix, ...]]:
    """(the node's connected networks from `k8s.ovn.org/host-cidrs`, its default pod subnets from
    `k8s.ovn.org/node-subnets` "default"): see `bgpadv.core.views`. Entries that do not parse are left out (the
    addresses of host-cidrs are node addresses anyway, `_node_addresses`)."""
    connected: list[Prefix] = []
    host_cidrs, _ok = _json(annotations, HOST_CIDRS_ANNOTATION)
    for value in host_cidrs if isinstance(host_cidrs, list) else ():
        found = parse_cidr(value)
        if found is not None:
            connected.append(found[0])
    pods: list[Prefix] = []
    subnets, _ok = _json(annotations, NODE_SUBNETS_ANNOTATION)
    default = subnets.get("default") if isinstance(subnets, dict) else None
    for value in default if isinstance(default, list) else [default]:
        found = parse_cidr(value)
        if found is not None:
            pods.append(found[0])
    return tuple(dict.fromkeys(connected)), tuple(dict.fromkeys(pods))


def _host_subnets(annotations: Mapping) -> tuple[Mapping[str, tuple[HostSubnet, ...]], Problem | None]:
    """The Layer3 host subnets of `k8s.ovn.org/node-subnets` per CUDN name, or the problem of the annotation."""
    raw = annotations.get(NODE_SUBNETS_ANNOTATION)
    if raw is None:
        return MappingProxyType({}), None
    decoded, ok = _json(annotations, NODE_SUBNETS_ANNOTATION)
    if not ok or not isinstance(decoded, dict):
        message = f"annotation {NODE_SUBNETS_ANNOTATION} is not a JSON object"
        return MappingProxyType({}), Problem(describe(raw), reasons.MALFORMED_OBJECT, message)
    out: dict[str, tuple[HostSubnet, ...]] = {}
    for k, value in decoded.items():
        if not k.startswith(CUDN_PREFIX) or value is None:
            continue
        values = value if isinstance(value, list) else [value]
        entries = []
        for v in values:
            found = parse_cidr(v)
            entries.append(HostSubnet(describe(v), found[0] if found is not None else None))
        out[k[len(CUDN_PREFIX) :]] = tuple(entries)
    return MappingProxyType(out), None


def decode_node(obj: object, key: object = None) -> Node:
    raw = _map(obj)
    meta = _map(raw.get("metadata"))
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        name = _key_name(key)
    created = _str(meta.get("creationTimestamp"))
    annotations = _map(meta.get("annotations"))
    candidates, every = _node_addresses(raw, annotations)
    subnets, problem = _host_subnets(annotations)
    connected, pods = _node_space(annotations)
    return Node(
        name=name,
        ref=ObjectRef("Node", name, "", _str(meta.get("uid")), created),
        resource_version=_version(meta),
        age=(created or NEWEST, name),
        labels=_labels(meta),
        next_hop_candidates=candidates,
        addresses=every,
        host_subnets=subnets,
        host_subnets_problem=problem,
        connected=connected,
        pod_subnets=pods,
    )
