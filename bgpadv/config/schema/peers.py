"""`peers[]`: the BGP neighbours, the session rules, and `localAddress: {fromEnv: VARIABLE}` resolved from the pod's
environment."""

import dataclasses
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Self

from pydantic import (
    ConfigDict,
    Field,
    PlainValidator,
    StrictBool,
    StrictStr,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema
from pydantic_core import PydanticCustomError

from bgpadv.config import unnumbered
from bgpadv.config.schema.bfd import BfdConfig
from bgpadv.config.schema.fields import (
    DESCRIPTION_RULE,
    FAMILIES,
    MD5_RULE,
    Asn,
    Between,
    Description,
    Families,
    Loc,
    Md5Password,
    Selector,
    Unicast,
    _not_in_file,
    _Section,
    problem,
    refuse,
    surroundings,
)
from bgpadv.config.schema.policy import ExportFilter
from bgpadv.core.bounded import brief
from bgpadv.core.prefix import Address

# --- localAddress from the pod's environment (one shared ConfigMap, a session source per node) --------------------

LOCAL_ADDRESS_FROM_ENV = "fromEnv"
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
_LOCAL_ADDRESS_SCHEMA = {
    "anyOf": [
        {"type": "string", "anyOf": [{"format": "ipv4"}, {"format": "ipv6"}]},
        {
            "type": "object",
            "properties": {
                LOCAL_ADDRESS_FROM_ENV: {
                    "type": "string",
                    "pattern": "^[A-Za-z_][A-Za-z0-9_]{0,127}$",
                    "description": "An environment variable of the pod holding the node's addresses, comma-separated "
                    "(the downward API's status.hostIPs: BGPADV_NODE_IPS in the shipped pods; status.hostIP: "
                    "BGPADV_NODE_IP); the one of the peer's family is the source address.",
                }
            },
            "required": [LOCAL_ADDRESS_FROM_ENV],
            "additionalProperties": False,
        },
    ]
}


def _local_address_from_env(spec: Mapping[str, Any], peer_address: Any, environ: Mapping[str, str]) -> str | None:
    """`localAddress: {fromEnv: NAME}` resolved in this pod: the address of the peer's family among the variable's
    comma-separated addresses (status.hostIPs gives one per family). Raises the problem (at `localAddress.fromEnv`)
    when the variable is unset, holds no address, none of the peer's family, or a special-purpose one; None when
    the peer's own address is invalid (reported there)."""
    from bgpadv.core.addressing import special_address_reason

    name = spec.get(LOCAL_ADDRESS_FROM_ENV)
    if set(spec) != {LOCAL_ADDRESS_FROM_ENV} or not isinstance(name, str) or not _ENV_NAME.fullmatch(name):
        raise problem(f"must be an address or {{{LOCAL_ADDRESS_FROM_ENV}: VARIABLE}}, got {brief(dict(spec))}")
    try:
        version = Address.parse(peer_address).version if isinstance(peer_address, str) else None
    except ValueError:
        version = None
    if version is None:
        return None
    value = environ.get(name, "").strip()
    if not value:
        raise problem(
            f"{name} is not set in this pod: set it from the downward API (env valueFrom fieldRef status.hostIPs; "
            "the shipped pods set BGPADV_NODE_IPS so)",
            at=f".{LOCAL_ADDRESS_FROM_ENV}",
        )
    addresses: list[Address] = []
    for text in value.split(","):
        try:
            addresses.append(Address.parse(text.strip()))
        except ValueError:
            raise problem(
                f"{name}={brief(value)}: {brief(text.strip())} is not an IP address", at=f".{LOCAL_ADDRESS_FROM_ENV}"
            ) from None
    family = [a for a in addresses if a.version == version]
    if not family:
        raise problem(
            f"{name}={brief(value)} holds no IPv{version} address for the IPv{version} peer {peer_address} (a "
            "single-stack node, or status.hostIP where status.hostIPs gives every family)",
            at=f".{LOCAL_ADDRESS_FROM_ENV}",
        )
    reason = special_address_reason(version, family[0].value)
    if reason is not None or family[0].value == 0 or family[0].is_multicast():
        raise problem(
            f"{name}={brief(value)}: {family[0]} is {reason or 'not a unicast address'}: not a session source",
            at=f".{LOCAL_ADDRESS_FROM_ENV}",
        )
    return str(family[0])


@dataclass(frozen=True, slots=True)
class PeerConfig(_Section):
    """A BGP neighbour (`peers[]`): a top-of-rack router."""

    __pydantic_config__ = ConfigDict(extra="forbid", json_schema_extra=unnumbered.address_or_interface)
    address: Annotated[
        Unicast,
        Field(
            description="The peer's address. With `interface`: its IPv6 link-local address on that link, or omitted "
            "to discover it when the controller starts."
        ),
    ]
    asn: Annotated[Asn, Field(description="The peer's AS number.")]
    local_address: Annotated[
        Unicast | None,
        WithJsonSchema(_LOCAL_ADDRESS_SCHEMA),
        Field(
            alias="localAddress",
            description="Source address of the session, same family as address; omitted: ExaBGP picks it "
            "(`local-address auto`). Required when passive. {fromEnv: VARIABLE}: this pod's node address of the "
            "peer's family, from that variable (per-node mode: each node's own address in one shared file).",
        ),
    ] = None
    hold_time: Annotated[
        Annotated[int, Between(0, 65535)], Field(alias="holdTime", description="Seconds; 0 or at least 3.")
    ] = 90
    passive: Annotated[
        StrictBool,
        Field(description="Wait for the ToR to connect; bgpadv listens on localAddress at exabgp.listenPort."),
    ] = False
    md5_password: Annotated[
        Md5Password | None,
        Field(
            alias="md5Password",
            description=f"TCP MD5 password inline ({MD5_RULE}); prefer md5PasswordFile (the configuration is a "
            "ConfigMap). Not both.",
        ),
    ] = None  # the password itself, from md5Password or read from md5PasswordFile
    md5_password_file: Annotated[
        StrictStr | None,
        Field(
            alias="md5PasswordFile",
            min_length=1,
            description="A file holding the TCP MD5 password (a mounted Secret key), read at start-up; one "
            f"trailing newline (LF or CRLF) is removed, the rest must be {MD5_RULE}.",
        ),
    ] = None  # where md5_password was read from (None: inline md5Password)
    graceful_restart: Annotated[
        Annotated[int, Between(0, 4095)] | None,
        WithJsonSchema({"anyOf": [{"type": "integer", "minimum": 0, "maximum": 4095}, {"const": False}]}),
        Field(
            alias="gracefulRestart",
            description="Seconds advertised in the graceful restart capability; false disables it.",
        ),
    ] = 120  # None: disabled
    families: Annotated[Families, Field(description="Address families of the session, each at most once.")] = FAMILIES
    # --- per-peer session knobs and placement ---
    node_selector: Annotated[
        Selector | None,
        Field(
            alias="nodeSelector",
            description="Only instances on nodes whose labels match peer with it (per-node: the instance's node; "
            "cluster: the node the replica runs on, BGPADV_POD_NODE_NAME); omitted: every instance.",
        ),
    ] = None
    port: Annotated[
        Annotated[int, Between(1, 65535)] | None,
        Field(description="The peer's TCP port bgpadv connects to (ExaBGP `connect`); omitted: 179. Not when passive."),
    ] = None
    ebgp_multihop: Annotated[
        Annotated[int, Between(1, 255)] | None,
        Field(
            alias="ebgpMultihop",
            description="TTL of the session's packets (ExaBGP `outgoing-ttl`) for an eBGP peer several hops away; "
            "omitted: the system's default TTL. eBGP only.",
        ),
    ] = None
    keepalive_time: Annotated[
        Annotated[int, Between(0, 21845)] | None,
        Field(
            alias="keepaliveTime",
            description="Seconds between keepalives. ExaBGP sends them every negotiated hold time / 3, so it must be "
            "holdTime / 3; with holdTime omitted, holdTime becomes 3 x keepaliveTime.",
        ),
    ] = None
    connect_retry: Annotated[
        Any,
        SkipJsonSchema(),
        Field(alias="connectRetry", description="Refused: ExaBGP (5.0.15) has no connect-retry setting."),
    ] = None
    description: Annotated[
        Description | None,
        Field(description=f"Free text for the ExaBGP neighbor (`description`), {DESCRIPTION_RULE}."),
    ] = None
    # --- unnumbered: a session over an interface's link-local addresses (bgpadv.config.unnumbered) ---
    interface: Annotated[
        StrictStr | None,
        Field(
            description="Peer over this interface's IPv6 link-local addresses (unnumbered, RFC 8950: IPv4 routes "
            "with the node's link-local next hop); per node, the uplink toward the ToR. Not with localAddress, "
            "passive or ebgpMultihop; BFD runs over the same addresses. See docs/unnumbered.md.",
        ),
    ] = None
    on_link: Annotated[Address | None, PlainValidator(_not_in_file), SkipJsonSchema()] = None
    """An interface peer's next hop, the node's link-local address on `interface`: found when the controller starts
    (`bgpadv.runtime.unnumbered`), never written in the file."""
    # --- end of unnumbered ---
    # --- BFD ---
    bfd: Annotated[
        BfdConfig,
        Field(description="A BFD session to the peer (FRR's bfdd, single hop); omitted: none."),
    ] = field(default_factory=BfdConfig)
    # --- end of BFD ---

    # --- export filter (policy) ---
    export_filter: Annotated[
        ExportFilter | None,
        Field(
            alias="exportFilter",
            description="A prefix list of the routes this peer gets (allow/deny, ge/le); omitted: every route.",
        ),
    ] = None
    self_addresses: Annotated[tuple[Address, ...], PlainValidator(_not_in_file), SkipJsonSchema()] = ()
    """What `next-hop self` stands for on this session per family where `nextHopSelf` says nothing and the session
    cannot resolve it: derived at controller start (`bgpadv.runtime.peering`), never written in the file."""

    @property
    def name(self) -> str:
        """The peer's label in metrics and logs: its address (`%eth1` for an interface peer not discovered yet)."""
        return f"%{self.interface}" if self.undiscovered else str(self.address)

    def ibgp(self, local_asn: int) -> bool:
        """An internal session (the peer is in our AS)."""
        return self.asn == local_asn

    def serves(self, labels: Mapping[str, str] | None) -> bool:
        """Whether an instance on a node with `labels` peers with this peer (None: the node is unknown, so only a
        peer without nodeSelector)."""
        if self.node_selector is None:
            return True
        return labels is not None and self.node_selector.matches(labels)

    @model_validator(mode="before")
    @classmethod
    def _local_address_from_pod(cls, data: Any, info: ValidationInfo) -> Any:
        """`localAddress: {fromEnv: NAME}`: the address this pod's variable gives (`_local_address_from_env`)."""
        if not isinstance(data, dict) or not isinstance(data.get("localAddress"), dict):
            return data
        try:
            local = _local_address_from_env(data["localAddress"], data.get("address"), surroundings(info).environ)
        except PydanticCustomError as e:
            context = e.context or {}
            where = ("localAddress", LOCAL_ADDRESS_FROM_ENV) if context.get("at") else ("localAddress",)
            refuse(data, [(where, str(context.get("problem", e)))])
        return {**data, "localAddress": local}

    @model_validator(mode="before")
    @classmethod
    def _undiscovered(cls, data: Any) -> Any:
        """An interface peer without `address`: discovered at start (`bgpadv.config.unnumbered.UNDISCOVERED`)."""
        if isinstance(data, dict) and data.get("interface") is not None and data.get("address") is None:
            return {**data, "address": unnumbered.UNDISCOVERED}
        return data

    @field_validator("address", mode="wrap")
    @classmethod
    def _address_or_undiscovered(cls, value: Any, handler: Callable[[Any], Any]) -> Any:
        return value if value is unnumbered.UNDISCOVERED else handler(value)

    @property
    def undiscovered(self) -> bool:
        """An interface peer whose address is not known yet (found when the controller starts)."""
        return self.address is unnumbered.UNDISCOVERED

    @model_validator(mode="before")
    @classmethod
    def _hold_from_keepalive(cls, data: Any) -> Any:
        """`keepaliveTime` without `holdTime`: holdTime = 3 x keepaliveTime (ExaBGP's keepalive interval)."""
        if isinstance(data, dict) and "holdTime" not in data:
            keepalive = data.get("keepaliveTime")
            if isinstance(keepalive, int) and not isinstance(keepalive, bool) and 0 <= keepalive <= 21845:
                return {**data, "holdTime": 3 * keepalive}
        return data

    @field_validator("hold_time", mode="after")
    @classmethod
    def _hold_time(cls, hold: int) -> int:
        if 0 < hold < 3:
            raise problem("must be 0 or at least 3 seconds")
        return hold

    @field_validator("graceful_restart", mode="wrap")
    @classmethod
    def _graceful_restart(cls, value: Any, handler: Callable[[Any], Any]) -> int | None:
        return None if value is False else handler(value)

    @model_validator(mode="after")
    def _rules(self, info: ValidationInfo) -> Self:
        problems: list[tuple[Loc, str]] = []
        local, address = self.local_address, self.address
        if local is not None and local.version != address.version:
            problems.append(
                (
                    ("localAddress",),
                    f"must be an IPv{address.version} address like the peer address {address}, got {local}",
                )
            )
        if self.passive and local is None and self.interface is None:
            problems.append((("localAddress",), "is required when passive is true: bgpadv listens there for the peer"))
        problems += unnumbered.interface_problems(self.interface, address, local, self.passive, self.ebgp_multihop)
        if self.interface is None:
            problems += _session_problems(address, local)
        if self.md5_password_file is not None and self.md5_password is not None:
            problems.append(
                (("md5PasswordFile",), "must not be set together with md5Password (keep the password in a Secret)")
            )
        problems.extend(self._knob_problems())
        if problems:
            refuse(self, problems)
        if self.md5_password_file is None:
            return self
        try:
            password = surroundings(info).secret(self.md5_password_file)
        except ValueError as e:
            refuse(self, [(("md5PasswordFile",), str(e))])
        return dataclasses.replace(self, md5_password=password)

    def _knob_problems(self) -> list[tuple[Loc, str]]:
        problems: list[tuple[Loc, str]] = []
        if self.connect_retry is not None:
            problems.append(
                (
                    ("connectRetry",),
                    "is not supported: ExaBGP (5.0.15 checked) has no connect-retry setting, per neighbor or per "
                    "process (exabgp.tcp.attempts caps the attempts, exabgp.tcp.delay delays announcements): after a "
                    "failed or closed connection it waits 0, 1, 2, 3, 4, 5, 7, 9, 11, 14 ... s (each delay 1 + 1.2 x "
                    "the previous, at most 60 s; reactor/delay.py), back to 0 once a session is established; remove it",
                )
            )
        if self.keepalive_time is not None and self.keepalive_time * 3 != self.hold_time:
            problems.append(
                (
                    ("keepaliveTime",),
                    f"must be holdTime / 3 ({self.hold_time / 3:g}): ExaBGP sends keepalives every negotiated hold "
                    f"time / 3, got {self.keepalive_time} (set holdTime: {self.keepalive_time * 3}, or omit it)",
                )
            )
        if self.passive and self.port is not None:
            problems.append(
                (("port",), "is for active sessions: a passive peer connects to exabgp.listenPort on localAddress")
            )
        problems.extend(self._bfd_problems())
        return problems

    def _bfd_problems(self) -> list[tuple[Loc, str]]:
        """BFD is single-hop here (bfdd's `peer X local-address Y`, TTL 255): not for a peer several hops away."""
        if self.bfd.enabled and self.ebgp_multihop is not None and self.ebgp_multihop > 1:
            return [
                (
                    ("bfd", "enabled"),
                    f"is single-hop BFD (UDP 3784, TTL 255): not with ebgpMultihop {self.ebgp_multihop}; "
                    "disable one of them",
                )
            ]
        return []


def _is_link_local6(address: Address) -> bool:
    return bool(address.version == 6 and address.is_link_local())


def _session_problems(address: Address, local: Address | None) -> list[tuple[Loc, str]]:
    """A session bgpadv cannot hold (single-hop eBGP, no interface binding): to itself, from a loopback address to a
    remote peer, or over an IPv6 link-local address (which needs the interface it is reached on)."""
    problems: list[tuple[Loc, str]] = []
    if _is_link_local6(address):
        problems.append(
            (
                ("address",),
                f"{address} is link-local: a link-local peer needs the interface it is reached on: set `interface` "
                "(an unnumbered session), or use the peer's global or unique-local address",
            )
        )
    if local is None or local.version != address.version:
        return problems
    if local == address:
        problems.append((("localAddress",), f"must not be the peer's own address {address} (a session to itself)"))
    elif local.is_loopback() and not address.is_loopback():
        problems.append(
            (
                ("localAddress",),
                f"{local} is loopback: the peer {address} is remote and bgpadv speaks single-hop eBGP only (no "
                "multihop); use the address of the interface toward the peer",
            )
        )
    elif _is_link_local6(local):
        problems.append((("localAddress",), f"{local} is link-local: it needs an interface bgpadv cannot configure"))
    return problems
