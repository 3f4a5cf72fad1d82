"""bgpadv's configuration: frozen dataclasses, loaded from one YAML file and validated on load.

Every error names the field path (`peers[0].asn`) and the problem. Keys are camelCase, as in Kubernetes objects.
Loading also reads what the file points at: each `peers[i].md5PasswordFile` (a mounted Secret key) and the
variable of a `metrics.listen: "${VARIABLE}:PORT"`; a missing one is an error with its field path.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TextIO

from netaddr import AddrFormatError, IPAddress, IPNetwork

from bgpadv.core import selectors, yamlsafe
from bgpadv.core.bounded import brief
from bgpadv.core.model import Attributes, normalize_community
from bgpadv.core.selectors import LabelSelector


class ConfigError(ValueError):
    """The configuration is invalid. `problems` lists every `path: message` found."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("; ".join(problems))


@dataclass(frozen=True, slots=True)
class PeerConfig:
    address: IPAddress
    asn: int
    local_address: IPAddress | None = None  # omitted: ExaBGP picks the source address (`local-address auto`)
    hold_time: int = 90
    passive: bool = False
    md5_password: str | None = None  # the password itself, from md5Password or read from md5PasswordFile
    md5_password_file: str | None = None  # where md5_password was read from (None: inline md5Password)
    graceful_restart: int | None = 120  # seconds advertised in the GR capability; None disables it
    families: tuple[str, ...] = ("ipv4 unicast", "ipv6 unicast")

    @property
    def name(self) -> str:
        """The peer's label in metrics and logs."""
        return str(self.address)


@dataclass(frozen=True, slots=True)
class NetworksConfig:
    selector: LabelSelector | None = None  # None: all CUDNs
    follow_route_advertisements: bool = False
    subnets: bool = True
    host_routes: bool = True
    secondary: tuple[SecondaryNetworkConfig, ...] = ()  # IPAM-less secondary networks (parse_secondary_networks)


@dataclass(frozen=True, slots=True)
class KubernetesConfig:
    kubeconfig: str | None = None  # None: in-cluster, then $KUBECONFIG
    context: str | None = None


@dataclass(frozen=True, slots=True)
class MetricsConfig:
    listen: str = "0.0.0.0:9179"  # `${VAR}:PORT` already resolved from the environment
    listen_from_env: str | None = None  # the variable the host came from (`${BGPADV_NODE_IP}:9179`), if any

    @property
    def host_port(self) -> tuple[str, int]:
        host, _, port = self.listen.rpartition(":")
        return host.strip("[]") or "0.0.0.0", int(port)


@dataclass(frozen=True, slots=True)
class ExaBGPConfig:
    """Knobs for the ExaBGP process bgpadv runs; defaults follow the measured facts in the reference notes."""

    reactor_speed: float = 0.1  # exabgp.reactor.speed: lower = faster bulk loads, more idle CPU
    max_inflight: int = 100  # commands written but not yet acknowledged
    chunk_prefixes: int = 1000  # NLRI per bulk command line
    listen_port: int = 179  # exabgp.tcp.port: where passive peers connect (on each passive peer's localAddress)


@dataclass(frozen=True, slots=True)
class SafetyConfig:
    """Limits that keep a wrong or partial view of the cluster off the fabric (the `safety` section).

    Defaults are chosen for a production fabric edge; `config/bgpadv.yaml` documents each.
    """

    min_prefix_length_v4: int = 16
    """No IPv4 route shorter than this is ever announced (a /8 from a cluster is a mistake, a /0 a hijack)."""
    min_prefix_length_v6: int = 48
    """No IPv6 route shorter than this is ever announced."""
    max_withdraw_fraction: float = 0.5
    """A relist or replan that would withdraw more than this fraction of a peer's routes at once is held."""
    hold_seconds: float = 120.0
    """Held withdrawals are carried out only when a confirming full LIST at least this much later still agrees."""
    max_routes: int = 200_000
    """Most routes announced to one peer (max-prefix); beyond it the newest routes are refused."""
    drain_seconds: float = 30.0
    """On SIGTERM: how long routes stay announced with GRACEFUL_SHUTDOWN (65535:0) before the speaker stops."""

    def min_prefix_length(self, version: int) -> int:
        return self.min_prefix_length_v4 if version == 4 else self.min_prefix_length_v6


ACCEPT_DEFAULT_ROUTE = (IPNetwork("0.0.0.0/0"), IPNetwork("::/0"))


@dataclass(frozen=True, slots=True)
class AcceptRule:
    """Import a learned prefix inside `prefix` whose length is at most `max_length` (None: exactly `prefix`), from
    the peers in `peers` (empty: every configured peer)."""

    prefix: IPNetwork
    max_length: int | None = None
    peers: tuple[IPAddress, ...] = ()


@dataclass(frozen=True, slots=True)
class ImportNetwork:
    """One network whose routing table receives the ToR's routes (`importRoutes.networks[]`).

    `name`: the CUDN's name; its VRF is found by name (OVN-K's rule, `bgpadv.importer.netlink.vrf_name`) unless
    `table` is set. `network_id`: OVN-K's network ID, needed for a name longer than 15 characters when the CUDN
    does not carry the `k8s.ovn.org/network-id` annotation. `external`: not a CUDN (an operator's own VRF): needs
    `table`; its `exclude` subnets replace the CUDN's. `accept`: the import policy; the default imports only the
    default routes (0.0.0.0/0, ::/0) from every peer.
    """

    name: str
    table: int | None = None
    network_id: int | None = None
    external: bool = False
    exclude: tuple[IPNetwork, ...] = ()
    accept: tuple[AcceptRule, ...] = tuple(AcceptRule(p) for p in ACCEPT_DEFAULT_ROUTE)


@dataclass(frozen=True, slots=True)
class ImportConfig:
    """`importRoutes`: the ToR's routes into each listed network's routing table, protocol 186 (off by default)."""

    enabled: bool = False
    networks: tuple[ImportNetwork, ...] = ()
    max_routes: int = 1000  # per network and family; the longest prefixes beyond it are left out
    reconcile_seconds: float = 10.0  # the periodic level-based repair (kernel dump, VRF lookup)


@dataclass(frozen=True, slots=True)
class Config:
    local_asn: int
    peers: tuple[PeerConfig, ...]
    router_id: IPAddress | None = None
    networks: NetworksConfig = field(default_factory=NetworksConfig)
    next_hop: str = "node"  # "node" | "self"
    attributes: Attributes = field(default_factory=Attributes)
    kubernetes: KubernetesConfig = field(default_factory=KubernetesConfig)
    metrics: MetricsConfig = field(default_factory=MetricsConfig)
    exabgp: ExaBGPConfig = field(default_factory=ExaBGPConfig)
    node_name: str | None = None  # per-node mode: this instance's node (None: cluster mode, the whole cluster)
    next_hop_self: tuple[IPAddress, ...] = ()  # what `self` stands for, per family; () = the session's address
    safety: SafetyConfig = field(default_factory=SafetyConfig)
    import_routes: ImportConfig = field(default_factory=ImportConfig)

    def self_address(self, version: int) -> IPAddress | None:
        """The explicit address `next-hop self` means for IP version 4 or 6, if configured."""
        return next((a for a in self.next_hop_self if a.version == version), None)


# Patterns are applied with fullmatch (`$` would also match before a trailing newline) and ASCII digits only
# (`\d` matches every Unicode digit, which int() accepts).
_LISTEN = re.compile(r"(\[[0-9a-fA-F:.]+\]|[^:\s]*):([0-9]{1,5})")
_LISTEN_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]{0,63})\}:([0-9]{1,5})")  # `${NODE_IP}:9179`
_FAMILIES = ("ipv4 unicast", "ipv6 unicast")
# What an ExaBGP configuration can carry between quotes without escaping (the speaker checks it again).
MD5_PASSWORD = re.compile(r"[A-Za-z0-9!#$%&()*+,\-./:<=>?@\[\]^_{|}~]{1,80}")  # use fullmatch


class _Reader:
    """Walks the raw YAML, collecting every problem with its path instead of stopping at the first."""

    def __init__(self) -> None:
        self.problems: list[str] = []

    def fail(self, path: str, message: str) -> None:
        self.problems.append(f"{path}: {message}")

    def mapping(self, raw: Any, path: str, allowed: set[str]) -> dict:
        if raw is None:
            return {}
        if not isinstance(raw, dict):
            self.fail(path, f"must be a mapping, got {type(raw).__name__}")
            return {}
        for key in raw:
            if key not in allowed:
                name = key if isinstance(key, str) and len(key) <= 64 else brief(key, 64)
                self.fail(f"{path}.{name}" if path else name, f"unknown field (allowed: {', '.join(sorted(allowed))})")
        return raw

    def boolean(self, raw: dict, key: str, path: str, default: bool) -> bool:
        value = raw.get(key, default)
        if not isinstance(value, bool):
            self.fail(f"{path}.{key}" if path else key, f"must be true or false, got {brief(value)}")
            return default
        return value

    def integer(self, raw: dict, key: str, path: str, lo: int, hi: int, default: int | None = None) -> int | None:
        p = f"{path}.{key}" if path else key
        if key not in raw or raw[key] is None:
            if default is None and key in raw:
                return None
            return default
        value = raw[key]
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(p, f"must be an integer, got {brief(value)}")
            return default
        if not lo <= value <= hi:
            self.fail(p, f"must be between {lo} and {hi}, got {brief(value)}")
            return default
        return value

    def required_integer(self, raw: dict, key: str, path: str, lo: int, hi: int) -> int | None:
        """An integer that must be present and not null."""
        p = f"{path}.{key}" if path else key
        if raw.get(key) is None:
            self.fail(p, "is required" if key not in raw else "is required, got null")
            return None
        return self.integer(raw, key, path, lo, hi)

    def unicast(self, address: IPAddress, path: str) -> None:
        """A BGP endpoint: not unspecified, multicast, limited broadcast or IPv4-mapped IPv6."""
        if address.value == 0:
            self.fail(path, f"must not be the unspecified address {address}")
        elif address.is_multicast() or (address.version == 4 and address.value == 0xFFFFFFFF):
            self.fail(path, f"must be a unicast address, got {address}")
        elif address.version == 6 and address.is_ipv4_mapped():
            self.fail(path, f"must not be an IPv4-mapped IPv6 address, got {address} (write the IPv4 address)")

    def address(self, raw: dict, key: str, path: str, required: bool = False) -> IPAddress | None:
        p = f"{path}.{key}" if path else key
        value = raw.get(key)
        if value is None:
            if required:
                self.fail(p, "is required")
            return None
        try:
            if not isinstance(value, str) or "/" in value:
                raise AddrFormatError(value)
            return IPAddress(value)
        except (AddrFormatError, ValueError, TypeError):
            self.fail(p, f"must be an IPv4 or IPv6 address, got {brief(value)}")
            return None

    def string(self, raw: dict, key: str, path: str, default: str | None = None) -> str | None:
        value = raw.get(key, default)
        if value is not None and not isinstance(value, str):
            self.fail(f"{path}.{key}" if path else key, f"must be a string, got {brief(value)}")
            return default
        return value

    def selector(self, raw: Any, path: str) -> LabelSelector | None:
        """A label selector (bgpadv.core.selectors, Kubernetes semantics); None when absent or malformed."""
        selector, problems = selectors.parse(raw)
        for sub, message in problems:
            self.fail(f"{path}{sub}", message)
        return selector

    def attributes(self, raw: Any, path: str) -> Attributes:
        raw = self.mapping(raw, path, {"localPreference", "med", "communities", "largeCommunities", "asPathPrepend"})
        communities = self._communities(raw, "communities", path, large=False)
        large = self._communities(raw, "largeCommunities", path, large=True)
        return Attributes(
            local_preference=self.integer(raw, "localPreference", path, 0, 4294967295),
            med=self.integer(raw, "med", path, 0, 4294967295),
            communities=communities,
            large_communities=large,
            as_path_prepend=self.integer(raw, "asPathPrepend", path, 0, 10, 0) or 0,
        )

    def _communities(self, raw: dict, key: str, path: str, large: bool) -> tuple[str, ...]:
        values = raw.get(key) or []
        p = f"{path}.{key}"
        if not isinstance(values, list):
            self.fail(p, "must be a list")
            return ()
        out: list[str] = []
        for i, v in enumerate(values):
            community = normalize_community(v, large)
            if community is None:
                self.fail(f"{p}[{i}]", f"is not a valid community value: {brief(v)}")
                continue
            out.append(community)
        return tuple(out)


NODE_NAME_ENV = "BGPADV_NODE_NAME"
"""The environment variable that names an instance's node in per-node mode (the DaemonSet sets it from the downward
API, `spec.nodeName`)."""

MODES = ("cluster", "per-node")


def _node_name(r: _Reader, top: dict, environ: Mapping[str, str]) -> str | None:
    """The node of a per-node instance, or None in cluster mode.

    `mode: per-node` selects per-node mode; without `mode`, a node name (`nodeName` in the file, or
    `BGPADV_NODE_NAME` in the environment, which only the per-node DaemonSet sets) selects it, so the per-node
    overlay needs no change to the shared configuration; `mode: cluster` announces the whole cluster whatever the
    environment says. The node is `nodeName` from the file, else `BGPADV_NODE_NAME`; when both are set they must
    agree (a shared ConfigMap naming one node would make every DaemonSet pod claim that node's VMs), and when neither
    is set in per-node mode the configuration is refused: an instance that does not know its node announces nothing.
    """
    from_env = environ.get(NODE_NAME_ENV) or None
    mode = top.get("mode", "per-node" if "nodeName" in top or from_env else "cluster")
    if mode not in MODES:
        r.fail("mode", f"must be cluster or per-node, got {brief(mode)}")
        return None
    from_file = r.string(top, "nodeName", "")
    if from_file == "":
        r.fail("nodeName", "must not be empty (omit it to take the node name from BGPADV_NODE_NAME)")
        return None
    if mode == "cluster":
        if from_file is not None:
            r.fail("nodeName", "is only for mode: per-node (cluster mode announces the whole cluster)")
        return None
    if from_file is not None and from_env is not None and from_file != from_env:
        r.fail("nodeName", f"{brief(from_file)} differs from {NODE_NAME_ENV}={brief(from_env)}")
        return None
    node = from_file or from_env
    if node is None:
        r.fail("mode", f"per-node mode needs the node name: set {NODE_NAME_ENV} (downward API) or nodeName")
    return node


def parse(raw: Any, environ: Mapping[str, str] | None = None) -> Config:
    """Validate a decoded YAML document; raise ConfigError listing every problem.

    `environ` (default `os.environ`) is read for `BGPADV_NODE_NAME` in per-node mode only."""
    r = _Reader()
    top = r.mapping(
        raw,
        "",
        {
            "localASN",
            "routerID",
            "peers",
            "networks",
            "nextHop",
            "attributes",
            "kubernetes",
            "metrics",
            "exabgp",
            "mode",
            "nodeName",
            "nextHopSelf",
            "safety",
            "importRoutes",
        },
    )
    if raw is None or not isinstance(raw, dict):
        raise ConfigError(r.problems or [": the configuration is empty"])
    local_asn = r.required_integer(top, "localASN", "", 1, 4294967295)
    router_id = r.address(top, "routerID", "")
    if router_id is not None and router_id.version != 4:
        r.fail("routerID", "must be an IPv4 address")
    elif router_id is not None and router_id.value == 0:
        r.fail("routerID", "must not be 0.0.0.0 (a BGP identifier is non-zero)")

    peers: list[PeerConfig] = []
    raw_peers = top.get("peers")
    if not isinstance(raw_peers, list) or not raw_peers:
        r.fail("peers", "must be a non-empty list")
        raw_peers = []
    seen: set[IPAddress] = set()
    for i, rp in enumerate(raw_peers):
        peer = _peer(r, rp, f"peers[{i}]", seen)
        if peer is not None:
            peers.append(peer)

    rn = r.mapping(
        top.get("networks"), "networks", {"selector", "followRouteAdvertisements", "subnets", "hostRoutes", "secondary"}
    )
    networks = NetworksConfig(
        selector=r.selector(rn.get("selector"), "networks.selector"),
        follow_route_advertisements=r.boolean(rn, "followRouteAdvertisements", "networks", False),
        subnets=r.boolean(rn, "subnets", "networks", True),
        host_routes=r.boolean(rn, "hostRoutes", "networks", True),
        secondary=parse_secondary_networks(r, rn.get("secondary"), "networks.secondary"),
    )
    next_hop = top.get("nextHop", "node")
    if next_hop not in ("node", "self"):
        r.fail("nextHop", f"must be node or self, got {brief(next_hop)}")
        next_hop = "node"

    rk = r.mapping(top.get("kubernetes"), "kubernetes", {"kubeconfig", "context"})
    rm = r.mapping(top.get("metrics"), "metrics", {"listen"})
    listen = r.string(rm, "listen", "metrics", "0.0.0.0:9179") or "0.0.0.0:9179"
    listen, listen_from_env = _listen_from_env(r, listen)
    m = _LISTEN.fullmatch(listen)
    if m is None or not 0 <= int(m.group(2)) <= 65535:
        r.fail("metrics.listen", f"must be HOST:PORT, got {brief(listen)}")
        listen = "0.0.0.0:9179"
    re_ = r.mapping(top.get("exabgp"), "exabgp", {"reactorSpeed", "maxInflight", "chunkPrefixes", "listenPort"})
    speed = re_.get("reactorSpeed", 0.1)
    if isinstance(speed, bool) or not isinstance(speed, int | float) or not 0.001 <= speed <= 10:
        r.fail("exabgp.reactorSpeed", f"must be a number between 0.001 and 10, got {brief(speed)}")
        speed = 0.1
    exabgp = ExaBGPConfig(
        reactor_speed=float(speed),
        max_inflight=r.integer(re_, "maxInflight", "exabgp", 1, 10000, 100) or 100,
        chunk_prefixes=r.integer(re_, "chunkPrefixes", "exabgp", 1, 5000, 1000) or 1000,
        listen_port=r.integer(re_, "listenPort", "exabgp", 1, 65535, 179) or 179,
    )
    node_name = _node_name(r, top, os.environ if environ is None else environ)
    rs = r.mapping(top.get("nextHopSelf"), "nextHopSelf", {"ipv4", "ipv6"})
    self4, self6 = r.address(rs, "ipv4", "nextHopSelf"), r.address(rs, "ipv6", "nextHopSelf")
    if self4 is not None and self4.version != 4:
        r.fail("nextHopSelf.ipv4", "must be an IPv4 address")
    elif self4 is not None:
        r.unicast(self4, "nextHopSelf.ipv4")
    if self6 is not None and self6.version != 6:
        r.fail("nextHopSelf.ipv6", "must be an IPv6 address")
    elif self6 is not None:
        r.unicast(self6, "nextHopSelf.ipv6")
    attributes = r.attributes(top.get("attributes"), "attributes")
    safety = _safety(r, top.get("safety"))
    import_routes = _import_routes(r, top.get("importRoutes"), {p.address for p in peers})

    kubernetes = KubernetesConfig(
        kubeconfig=r.string(rk, "kubeconfig", "kubernetes"), context=r.string(rk, "context", "kubernetes")
    )

    if r.problems:
        raise ConfigError(r.problems)
    assert local_asn is not None
    return Config(
        local_asn=local_asn,
        peers=tuple(peers),
        router_id=router_id,
        networks=networks,
        next_hop=next_hop,
        attributes=attributes,
        kubernetes=kubernetes,
        metrics=MetricsConfig(listen=listen, listen_from_env=listen_from_env),
        exabgp=exabgp,
        node_name=node_name,
        next_hop_self=tuple(a for a in (self4, self6) if a is not None),
        safety=safety,
        import_routes=import_routes,
    )


def _peer(r: _Reader, raw: Any, p: str, seen: set[IPAddress]) -> PeerConfig | None:
    """One `peers[i]` entry; None (with its problems recorded) when invalid."""
    problems = len(r.problems)
    if not isinstance(raw, dict):
        r.fail(p, f"must be a mapping with at least address and asn, got {brief(raw)}")
        return None
    rp = r.mapping(
        raw,
        p,
        {
            "address",
            "asn",
            "localAddress",
            "holdTime",
            "passive",
            "md5Password",
            "md5PasswordFile",
            "gracefulRestart",
            "families",
        },
    )
    address = r.address(rp, "address", p, required=True)
    if address is not None:
        r.unicast(address, f"{p}.address")
        if address in seen:
            r.fail(f"{p}.address", f"peer {address} is listed twice")
        seen.add(address)
    asn = r.required_integer(rp, "asn", p, 1, 4294967295)
    local_address = r.address(rp, "localAddress", p)
    if local_address is not None:
        r.unicast(local_address, f"{p}.localAddress")
        if address is not None and local_address.version != address.version:
            r.fail(
                f"{p}.localAddress",
                f"must be an IPv{address.version} address like the peer address {address}, got {local_address}",
            )
    hold = r.integer(rp, "holdTime", p, 0, 65535, 90)
    if hold is not None and 0 < hold < 3:
        r.fail(f"{p}.holdTime", "must be 0 or at least 3 seconds")
    gr = r.integer(rp, "gracefulRestart", p, 0, 4095, 120) if rp.get("gracefulRestart") is not False else None
    families = rp.get("families", list(_FAMILIES))
    if (
        not isinstance(families, list)
        or not families
        or not all(isinstance(f, str) and f in _FAMILIES for f in families)
    ):
        r.fail(f"{p}.families", f"must be a non-empty list of {', '.join(_FAMILIES)}")
        families = list(_FAMILIES)
    elif len(set(families)) != len(families):
        repeated = sorted({f for f in families if families.count(f) > 1})
        r.fail(f"{p}.families", f"lists {', '.join(repeated)} more than once")
    md5 = r.string(rp, "md5Password", p)
    if md5 is not None and not MD5_PASSWORD.fullmatch(md5):
        r.fail(f"{p}.md5Password", "must be 1-80 printable ASCII characters without spaces, quotes or ';'")
    md5_file = r.string(rp, "md5PasswordFile", p)
    if md5_file is not None:
        if md5 is not None:
            r.fail(f"{p}.md5PasswordFile", "must not be set together with md5Password (keep the password in a Secret)")
        else:
            md5 = _md5_password_file(r, md5_file, f"{p}.md5PasswordFile")
    passive = r.boolean(rp, "passive", p, False)
    if passive and local_address is None and address is not None:
        r.fail(f"{p}.localAddress", "is required when passive is true: bgpadv listens there for the peer")
    if len(r.problems) > problems or address is None or asn is None:
        return None
    return PeerConfig(
        address=address,
        asn=asn,
        local_address=local_address,
        hold_time=hold if hold is not None else 90,
        passive=passive,
        md5_password=md5,
        md5_password_file=md5_file,
        graceful_restart=gr,
        families=tuple(families),
    )


def _md5_password_file(r: _Reader, path: str, p: str) -> str | None:
    """The TCP MD5 password in the file at `path` (a mounted Secret key), checked like an inline md5Password.

    One trailing newline (LF or CRLF) is removed: `echo pw > file` writes one, and a Secret made from that file
    (`kubectl create secret generic --from-file`) keeps it byte for byte. Anything else (a second newline, spaces)
    is part of the file and refused by the character rules, so the password is never silently other than the one
    the file shows. At most 4 KiB are read (a password is at most 80 characters).
    """
    if not path:
        r.fail(p, "must not be empty")
        return None
    try:
        with open(path, "rb") as f:
            data = f.read(4096)
    except OSError as e:
        r.fail(p, f"cannot read {brief(path)}: {e.strerror or e}")
        return None
    text = data.decode("ascii", errors="replace")
    text = text.removesuffix("\n").removesuffix("\r") if text.endswith("\n") else text
    if not MD5_PASSWORD.fullmatch(text):
        r.fail(
            p,
            f"{brief(path)} must hold 1-80 printable ASCII characters without spaces, quotes or ';' (one "
            "trailing newline allowed)",
        )
        return None
    return text


def _listen_from_env(r: _Reader, listen: str) -> tuple[str, str | None]:
    """`${VAR}:PORT` → (`<value of VAR>:PORT`, VAR): the metrics listener on an address only the pod's environment
    knows (the node's address, `status.hostIP` through the downward API). Anything else is returned as it is."""
    m = _LISTEN_ENV.fullmatch(listen)
    if m is None:
        if "${" in listen:
            r.fail("metrics.listen", f"must be HOST:PORT or ${{VARIABLE}}:PORT, got {brief(listen)}")
            return "0.0.0.0:9179", None
        return listen, None
    name, port = m.group(1), m.group(2)
    value = os.environ.get(name, "")
    if not value:
        r.fail("metrics.listen", f"the environment variable {name} is not set (the pod sets it from status.hostIP)")
        return "0.0.0.0:9179", name
    try:
        host = IPAddress(value)
    except (AddrFormatError, ValueError):
        r.fail("metrics.listen", f"the environment variable {name} must hold an IP address, got {brief(value)}")
        return "0.0.0.0:9179", name
    return (f"[{host}]:{port}" if host.version == 6 else f"{host}:{port}"), name


def _number(r: _Reader, raw: dict, key: str, path: str, lo: float, hi: float, default: float) -> float:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not lo <= value <= hi:
        r.fail(f"{path}.{key}", f"must be a number between {lo:g} and {hi:g}, got {brief(value)}")
        return default
    return float(value)


def _safety(r: _Reader, raw: Any) -> SafetyConfig:
    d = SafetyConfig()
    rs = r.mapping(
        raw,
        "safety",
        {"minPrefixLength", "maxWithdrawFraction", "holdSeconds", "maxRoutes", "drainSeconds"},
    )
    rp = r.mapping(rs.get("minPrefixLength"), "safety.minPrefixLength", {"ipv4", "ipv6"})
    v4 = r.integer(rp, "ipv4", "safety.minPrefixLength", 1, 32, d.min_prefix_length_v4)
    v6 = r.integer(rp, "ipv6", "safety.minPrefixLength", 1, 128, d.min_prefix_length_v6)
    return SafetyConfig(
        min_prefix_length_v4=v4 if v4 is not None else d.min_prefix_length_v4,
        min_prefix_length_v6=v6 if v6 is not None else d.min_prefix_length_v6,
        max_withdraw_fraction=_number(r, rs, "maxWithdrawFraction", "safety", 0.0, 1.0, d.max_withdraw_fraction),
        hold_seconds=_number(r, rs, "holdSeconds", "safety", 60.0, 86400.0, d.hold_seconds),
        max_routes=r.integer(rs, "maxRoutes", "safety", 1, 10_000_000, d.max_routes) or d.max_routes,
        drain_seconds=_number(r, rs, "drainSeconds", "safety", 0.0, 3600.0, d.drain_seconds),
    )


def _network_value(r: _Reader, value: Any, path: str) -> IPNetwork | None:
    try:
        net = IPNetwork(value) if isinstance(value, str) else None
    except (AddrFormatError, ValueError, TypeError):
        net = None
    if net is None or net.ip != net.network:
        r.fail(path, f"must be a CIDR with no host bits, got {brief(value)}")
        return None
    return net


def _import_routes(r: _Reader, raw: Any, peers: set[IPAddress]) -> ImportConfig:
    d = ImportConfig()
    ri = r.mapping(raw, "importRoutes", {"enabled", "networks", "maxRoutes", "reconcileSeconds"})
    networks: list[ImportNetwork] = []
    raw_networks = ri.get("networks", [])
    if not isinstance(raw_networks, list):
        r.fail("importRoutes.networks", "must be a list")
        raw_networks = []
    names: set[str] = set()
    keys = {"name", "table", "networkID", "external", "exclude", "accept"}
    for i, rn in enumerate(raw_networks):
        path = f"importRoutes.networks[{i}]"
        m = r.mapping(rn, path, keys)
        name = r.string(m, "name", path)
        if not name:
            r.fail(f"{path}.name", "is required")
            continue
        if name in names:
            r.fail(f"{path}.name", f"{name!r} is listed twice")
        names.add(name)
        table = r.integer(m, "table", path, 1, 4294967295)
        if table is not None and table in (253, 254, 255):
            r.fail(f"{path}.table", "must not be the default, main or local table")
        external = r.boolean(m, "external", path, False)
        if external and table is None:
            r.fail(f"{path}.table", "is required for an external network")
        exclude = []
        for j, value in enumerate(m.get("exclude", []) if isinstance(m.get("exclude", []), list) else [None]):
            net = _network_value(r, value, f"{path}.exclude[{j}]")
            if net is not None:
                exclude.append(net)
        rules: list[AcceptRule] = []
        raw_rules = m.get("accept")
        if raw_rules is not None and not isinstance(raw_rules, list):
            r.fail(f"{path}.accept", "must be a list")
            raw_rules = []
        for j, rr in enumerate(raw_rules or []):
            rpath = f"{path}.accept[{j}]"
            ra = r.mapping(rr, rpath, {"prefix", "maxLength", "peers"})
            prefix = _network_value(r, ra.get("prefix"), f"{rpath}.prefix")
            if prefix is None:
                continue
            width = 32 if prefix.version == 4 else 128
            max_length = r.integer(ra, "maxLength", rpath, prefix.prefixlen, width)
            rule_peers = []
            for k, value in enumerate(ra.get("peers", []) if isinstance(ra.get("peers", []), list) else [None]):
                try:
                    address = IPAddress(value) if isinstance(value, str) else None
                except (AddrFormatError, ValueError):
                    address = None
                if address is None or address not in peers:
                    r.fail(f"{rpath}.peers[{k}]", f"must be a configured peer's address, got {brief(value)}")
                else:
                    rule_peers.append(address)
            rules.append(AcceptRule(prefix, max_length, tuple(rule_peers)))
        network = ImportNetwork(
            name=name,
            table=table,
            network_id=r.integer(m, "networkID", path, 0, 65535),
            external=external,
            exclude=tuple(exclude),
        )
        if raw_rules is not None:
            network = replace(network, accept=tuple(rules))
        networks.append(network)
    return ImportConfig(
        enabled=r.boolean(ri, "enabled", "importRoutes", False),
        networks=tuple(networks),
        max_routes=r.integer(ri, "maxRoutes", "importRoutes", 1, 1_000_000, d.max_routes) or d.max_routes,
        reconcile_seconds=_number(r, ri, "reconcileSeconds", "importRoutes", 1.0, 3600.0, d.reconcile_seconds),
    )


def load_or_report(path: str | Path, stream: TextIO | None = None) -> Config | None:
    """Load a configuration for a command line: on failure, print one `path: problem` line per problem (to stderr
    by default) and return None; the caller exits 2."""
    out = stream if stream is not None else sys.stderr
    try:
        return load(path)
    except ConfigError as e:
        problems = e.problems
    except OSError as e:
        problems = [f"cannot read the configuration: {e.strerror or e}"]
    prefix = f"{path}: "
    for problem in problems:
        print(problem if problem.startswith(prefix) else prefix + problem, file=out)  # file-level ones name it
    return None


def load(path: str | Path) -> Config:
    """Read and validate a configuration file; raise ConfigError (with field paths) or OSError.

    The YAML is read by `bgpadv.core.yamlsafe.load_documents`, as manifests are: aliases, deep nesting, tags other than
    plain data and repeated keys are refused. The file must hold one document (an empty file is an empty config).
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError([f"{path}: not UTF-8 text: {e.reason}"]) from None
    documents = list(yamlsafe.load_documents(text))
    refused = [doc for _, doc in documents if isinstance(doc, yamlsafe.Refused)]
    if refused:
        raise ConfigError([f"{path}: {doc}" for doc in refused])
    if len(documents) > 1:
        raise ConfigError([f"{path}: must hold one YAML document, found {len(documents)}"])
    return parse(documents[0][1] if documents else None)


DEFAULT_MAX_ADDRESSES_PER_INTERFACE = 4
"""Guest-reported addresses taken per VMI interface of an IPAM-less secondary network, unless configured."""


@dataclass(frozen=True, slots=True)
class SecondaryNetworkConfig:
    """What bgpadv may announce for one IPAM-less secondary Layer2 CUDN (`networks.secondary[]`).

    `allowed_prefixes`: the only ranges a guest-reported address may lie in (with a CUDN subnet, both bound it; without
    one, nothing of the network is announced unless they are given). `max_addresses_per_interface`: the most
    addresses taken from one VMI interface (a guest reports anything; the rest is refused).
    """

    name: str
    allowed_prefixes: tuple[IPNetwork, ...] = ()
    max_addresses_per_interface: int = DEFAULT_MAX_ADDRESSES_PER_INTERFACE


def parse_secondary_networks(r: _Reader, raw: Any, path: str) -> tuple[SecondaryNetworkConfig, ...]:
    """`networks.secondary`: a list of {name, allowedPrefixes, maxAddressesPerInterface}, names unique."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        r.fail(path, f"must be a list, got {type(raw).__name__}")
        return ()
    out: list[SecondaryNetworkConfig] = []
    seen: set[str] = set()
    for i, entry in enumerate(raw):
        p = f"{path}[{i}]"
        e = r.mapping(entry, p, {"name", "allowedPrefixes", "maxAddressesPerInterface"})
        if not isinstance(entry, dict):
            continue
        name = e.get("name")
        if not isinstance(name, str) or not name:
            r.fail(f"{p}.name", f"is required: the name of a ClusterUserDefinedNetwork, got {brief(name)}")
            continue
        if name in seen:
            r.fail(f"{p}.name", f"{name} is listed twice")
            continue
        seen.add(name)
        prefixes: list[IPNetwork] = []
        raw_prefixes = e.get("allowedPrefixes")
        if raw_prefixes is not None and not isinstance(raw_prefixes, list):
            r.fail(f"{p}.allowedPrefixes", f"must be a list of CIDRs, got {brief(raw_prefixes)}")
            raw_prefixes = []
        for j, text in enumerate(raw_prefixes or []):
            pp = f"{p}.allowedPrefixes[{j}]"
            try:
                if not isinstance(text, str) or "/" not in text:
                    raise AddrFormatError(text)
                net = IPNetwork(text)
            except (AddrFormatError, ValueError, TypeError):
                r.fail(pp, f"must be a CIDR such as 10.99.0.0/24, got {brief(text)}")
                continue
            if net.network != net.ip:
                r.fail(pp, f"has host bits set (write {net.cidr})")
                continue
            if net.prefixlen == 0:
                r.fail(pp, "must not be a default route")
                continue
            prefixes.append(net)
        limit = r.integer(e, "maxAddressesPerInterface", p, 1, 64, DEFAULT_MAX_ADDRESSES_PER_INTERFACE)
        out.append(SecondaryNetworkConfig(name, tuple(prefixes), limit or DEFAULT_MAX_ADDRESSES_PER_INTERFACE))
    return tuple(out)
