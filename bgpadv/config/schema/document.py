"""`Config`, the whole file: the top-level keys (`localASN`, `routerID`, `nextHop`, `nextHopSelf`, `nodeName`,
`mode`) with each section in its place, and the rules between sections."""

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Literal, Self

from pydantic import (
    AfterValidator,
    Field,
    PlainValidator,
    StrictStr,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema

from bgpadv.config import communities as well_known
from bgpadv.config.schema.fields import (
    Asn,
    Loc,
    NextHop4,
    NextHop6,
    RouterID,
    _not_in_file,
    _read_as,
    _Section,
    _unique,
    problem,
    refuse,
    surroundings,
)
from bgpadv.config.schema.imports import ImportConfig
from bgpadv.config.schema.networks import NetworksConfig, OvnKubernetesConfig
from bgpadv.config.schema.peers import PeerConfig
from bgpadv.config.schema.policy import ROUTE_KIND_NAMES, PathAttributes, Policy
from bgpadv.config.schema.process import ExaBGPConfig, KubernetesConfig, MetricsConfig, SessionStateConfig
from bgpadv.config.schema.safety import SafetyConfig
from bgpadv.core.bounded import brief
from bgpadv.core.model import Attributes
from bgpadv.core.prefix import Address


@dataclass(frozen=True, slots=True)
class NextHopSelf(_Section):
    """`nextHopSelf`: what `self` stands for per family (held as a tuple of addresses in `Config.next_hop_self`)."""

    ipv4: Annotated[
        NextHop4 | None,
        Field(
            description="The IPv4 address; never in a special-purpose range refused for next hops (loopback, "
            "documentation, ...)."
        ),
    ] = None
    ipv6: Annotated[
        NextHop6 | None,
        Field(
            description="The IPv6 address; never in a special-purpose range refused for next hops (link-local, "
            "NAT64, documentation, ...)."
        ),
    ] = None

    def held(self) -> tuple[Address, ...]:
        return tuple(a for a in (self.ipv4, self.ipv6) if a is not None)


NODE_NAME_ENV = "BGPADV_NODE_NAME"
"""The environment variable that names an instance's node in per-node mode (the DaemonSet sets it from the downward
API, `spec.nodeName`)."""

MODES = ("cluster", "per-node")


POD_NODE_NAME_ENV = "BGPADV_POD_NODE_NAME"
"""The environment variable that names the node a cluster-mode replica runs on (the Deployment sets it from the
downward API, `spec.nodeName`): the node whose labels `peers[].nodeSelector` is matched against. Unlike
`BGPADV_NODE_NAME` it does not select per-node mode."""


def _node_name(value: str) -> str:
    if not value:
        raise problem("must not be empty (omit it to take the node name from BGPADV_NODE_NAME)")
    return value


@dataclass(frozen=True, slots=True)
class Config(_Section):
    """bgpadv's configuration (the whole file)."""

    local_asn: Annotated[Asn, Field(alias="localASN", description="Our AS number.")]
    peers: Annotated[
        tuple[PeerConfig, ...],
        Field(min_length=1, description="BGP neighbours: the top-of-rack router(s)."),
    ]
    router_id: Annotated[
        RouterID | None,
        Field(alias="routerID", description="BGP router ID (IPv4, not 0.0.0.0); omitted: ExaBGP derives one."),
    ] = None
    networks: NetworksConfig = field(default_factory=NetworksConfig)
    next_hop: Annotated[
        Literal["node", "self"],
        Field(
            alias="nextHop",
            description='Next hop of host routes: "node" = the node the VM runs on now (it follows live '
            'migrations); "self" = the speaker\'s own address.',
        ),
    ] = "node"
    attributes: Annotated[
        Attributes,
        _read_as(PathAttributes, PathAttributes.held),
        Field(description="Path attributes added to every route."),
    ] = field(default_factory=Attributes)
    # --- policies ---
    policies: Annotated[
        tuple[Policy, ...],
        AfterValidator(_unique(lambda p: p.name, lambda i: (i, "name"), lambda name: f"{name!r} is listed twice")),
        Field(description="Path attributes per network and per VM (applied in order over attributes)."),
    ] = ()
    kubernetes: KubernetesConfig = field(default_factory=KubernetesConfig)
    metrics: MetricsConfig = field(default_factory=MetricsConfig)
    exabgp: ExaBGPConfig = field(default_factory=ExaBGPConfig)
    node_name: Annotated[
        StrictStr | None,
        AfterValidator(_node_name),
        Field(
            alias="nodeName",
            description="Per-node mode's node; omitted: BGPADV_NODE_NAME (the DaemonSet sets it); both set and "
            "different is an error.",
        ),
    ] = None  # per-node mode: this instance's node (None: cluster mode, the whole cluster)
    next_hop_self: Annotated[
        tuple[Address, ...],
        _read_as(NextHopSelf, NextHopSelf.held),
        Field(
            alias="nextHopSelf",
            description='What "self" stands for per family; omitted: the address of the BGP session.',
        ),
    ] = field(default_factory=tuple)  # what `self` stands for, per family; () = the session's address
    safety: SafetyConfig = field(default_factory=SafetyConfig)
    ovn_kubernetes: Annotated[OvnKubernetesConfig, Field(alias="ovnKubernetes")] = field(
        default_factory=OvnKubernetesConfig
    )
    import_routes: Annotated[ImportConfig, Field(alias="importRoutes")] = field(default_factory=ImportConfig)
    session_state: Annotated[SessionStateConfig, Field(alias="sessionState")] = field(
        default_factory=SessionStateConfig
    )  # session status in the API (BGPSessionState objects)
    mode: Annotated[
        Literal["cluster", "per-node"] | None,
        Field(
            description="cluster (one instance announces the whole cluster) or per-node (one per node); omitted: "
            "per-node when nodeName or BGPADV_NODE_NAME names a node, else cluster."
        ),
    ] = None  # as written; node_name is the outcome
    speaker_node: Annotated[str | None, PlainValidator(_not_in_file), SkipJsonSchema()] = None
    """The node this instance runs on, whose labels select its peers (`peers[].nodeSelector`): `node_name` in
    per-node mode, `BGPADV_POD_NODE_NAME` in cluster mode (None: unknown, only peers without a selector)."""

    def served_peers(self, labels: Mapping[str, str] | None) -> tuple[PeerConfig, ...]:
        """The peers an instance on a node with `labels` peers with (None: the node's labels are unknown)."""
        return tuple(p for p in self.peers if p.serves(labels))

    def serving(self, labels: Mapping[str, str] | None) -> Self:
        """This configuration as an instance on a node with `labels` runs it: its peers narrowed to the served ones
        (`served_peers`). What ExaBGP, the speaker and the guard are given."""
        served = self.served_peers(labels)
        return self if served == self.peers else dataclasses.replace(self, peers=served)

    @property
    def peer_selection(self) -> bool:
        """Some peer has a nodeSelector: which peers this instance serves depends on its node's labels."""
        return any(p.node_selector is not None for p in self.peers)

    @model_validator(mode="after")
    def _ibgp_knobs(self) -> Self:
        problems: list[tuple[Loc, str]] = [
            (("peers", i, "ebgpMultihop"), f"is for eBGP peers: AS {peer.asn} is localASN (iBGP is not TTL-limited)")
            for i, peer in enumerate(self.peers)
            if peer.ebgp_multihop is not None and peer.ibgp(self.local_asn)
        ]
        if problems:
            refuse(self, problems)
        return self

    @model_validator(mode="after")
    def _local_preference_needs_ibgp(self) -> Self:
        """LOCAL_PREF goes to internal peers only: set where every peer is eBGP, it would do nothing."""
        if any(p.ibgp(self.local_asn) for p in self.peers):
            return self
        why = f"is sent to iBGP peers only, and every peer is eBGP (no peer has asn {self.local_asn}, localASN)"
        problems: list[tuple[Loc, str]] = []
        if self.attributes.local_preference is not None:
            problems.append((("attributes", "localPreference"), why))
        problems += [
            (("policies", i, "set", "localPreference"), why)
            for i, policy in enumerate(self.policies)
            if policy.actions.local_preference is not None
        ]
        if problems:
            refuse(self, problems)
        return self

    def community_sources(self) -> list[well_known.Source]:
        """`attributes` and each policy as blocks that add communities (`bgpadv.config.communities`)."""
        out = [
            well_known.Source(
                ("attributes",),
                frozenset(ROUTE_KIND_NAMES),
                self.attributes.communities,
                self.attributes.large_communities,
            )
        ]
        out += [
            well_known.Source(
                ("policies", i, "set"),
                frozenset(p.match.reachable),
                p.actions.communities,
                p.actions.large_communities,
            )
            for i, p in enumerate(self.policies)
        ]
        return out

    @model_validator(mode="after")
    def _community_limits(self) -> Self:
        """No route may carry more communities than one path attribute holds (worst case over the policies)."""
        problems: list[tuple[Loc, str]] = [
            (loc, well_known.limit_message(kind, name, count, limit))
            for loc, kind, name, count, _size, limit in well_known.worst_cases(self.community_sources())
            if limit
        ]
        if problems:
            refuse(self, problems)
        return self

    def self_address(self, version: int) -> Address | None:
        """The explicit address `next-hop self` means for IP version 4 or 6, if configured."""
        return next((a for a in self.next_hop_self if a.version == version), None)

    @field_validator("peers", mode="after")
    @classmethod
    def _peers(cls, peers: tuple[PeerConfig, ...], info: ValidationInfo) -> tuple[PeerConfig, ...]:
        # an interface peer's address may be found only at start (each such peer is its own until then)
        address = lambda p: object() if p.undiscovered else p.address  # noqa: E731
        _unique(address, lambda i: (i, "address"), lambda a: f"peer {a} is listed twice")(peers)
        known = frozenset(p.address for p in peers if not p.undiscovered)
        surroundings(info).peers = known  # for importRoutes.networks[].accept[].peers
        return peers

    @model_validator(mode="after")
    def _self_addresses(self) -> Self:
        """No address is both a peer's and ours: a `nextHopSelf` address or a session's `localAddress` that is a
        peer's address would send the peer routes pointing at itself (RFC 4271 5.1.3) or peer bgpadv with itself."""
        problems: list[tuple[Loc, str]] = []
        peers = {p.address: i for i, p in enumerate(self.peers)}
        for family in ("ipv4", "ipv6"):
            address = self.self_address(4 if family == "ipv4" else 6)
            if address is not None and address in peers:
                i = peers[address]
                problems.append(
                    (("nextHopSelf", family), f"{address} is the address of peers[{i}]: a next hop must be ours")
                )
                problems.append((("peers", i, "address"), f"{address} is also nextHopSelf.{family}, our own address"))
        for i, peer in enumerate(self.peers):
            j = peers.get(peer.local_address) if peer.local_address is not None else None
            if j is not None and j != i:
                problems.append(
                    (("peers", i, "localAddress"), f"{peer.local_address} is the address of peers[{j}], not ours")
                )
        if problems:
            refuse(self, problems)
        return self

    @model_validator(mode="after")
    def _node(self, info: ValidationInfo) -> Self:
        """The node of a per-node instance, or None in cluster mode.

        `mode: per-node` selects per-node mode; without `mode`, a node name (`nodeName` in the file, or
        `BGPADV_NODE_NAME` in the environment, which only the per-node DaemonSet sets) selects it, so the per-node
        overlay needs no change to the shared configuration; `mode: cluster` announces the whole cluster whatever the
        environment says. The node is `nodeName` from the file, else `BGPADV_NODE_NAME`; when both are set they must
        agree (a shared ConfigMap naming one node would make every DaemonSet pod claim that node's VMs), and when
        neither is set in per-node mode the configuration is refused: an instance that does not know its node
        announces nothing.
        """
        from_env = surroundings(info).environ.get(NODE_NAME_ENV) or None
        from_file = self.node_name
        mode = self.mode or ("per-node" if from_file is not None or from_env else "cluster")
        if mode == "cluster":
            if from_file is not None:
                refuse(self, [(("nodeName",), "is only for mode: per-node (cluster mode announces the whole cluster)")])
            runs_on = surroundings(info).environ.get(POD_NODE_NAME_ENV) or None
            return self if runs_on is None else dataclasses.replace(self, speaker_node=runs_on)
        if from_file is not None and from_env is not None and from_file != from_env:
            refuse(self, [(("nodeName",), f"{brief(from_file)} differs from {NODE_NAME_ENV}={brief(from_env)}")])
        node = from_file or from_env
        if node is None:
            refuse(
                self,
                [(("mode",), f"per-node mode needs the node name: set {NODE_NAME_ENV} (downward API) or nodeName")],
            )
        return dataclasses.replace(self, node_name=node, speaker_node=node)
