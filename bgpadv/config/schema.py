"""The configuration's schema: every key of `bgpadv.yaml`, its type, bounds, default and documentation, and the rules
between keys.

Each section is a frozen dataclass: code builds and `dataclasses.replace`s them freely, without validation (tests
build invalid ones on purpose). `bgpadv.config.load.parse` validates a YAML document into them with pydantic
(`TypeAdapter(Config)`), which reads the metadata written here: the camelCase key as users write it (`alias`), the
documentation (`description`), the bounds, and the default, written once as the dataclass default. Unknown keys are
refused (`extra="forbid"`); values are strict: a string where an integer belongs is an error, never converted.
`null` for an optional key is the same as leaving the key out (`_Section`).

Every error is raised as a pydantic error with a plain-English message (`must be between 1 and 4294967295, got 0`);
`load` turns them into `path: problem` lines. What the file points at (a `md5PasswordFile`, the variable of
`metrics.listen: "${VARIABLE}:PORT"`, `BGPADV_NODE_NAME`) is read through the `Surroundings` that `load` passes as
the validation context.
"""

import dataclasses
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, NoReturn, Protocol, Self, cast

from netaddr import AddrFormatError, IPAddress, IPNetwork
from pydantic import (
    AfterValidator,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    GetPydanticSchema,
    PlainSerializer,
    PlainValidator,
    StrictBool,
    StrictStr,
    ValidationError,
    ValidationInfo,
    WithJsonSchema,
    WrapValidator,
    field_validator,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema
from pydantic_core import InitErrorDetails, PydanticCustomError, PydanticKnownError, core_schema

from bgpadv.config import communities as well_known
from bgpadv.config import unnumbered
from bgpadv.core import selectors
from bgpadv.core.addressing import special_address_reason
from bgpadv.core.bounded import brief
from bgpadv.core.model import Attributes, normalize_community
from bgpadv.core.selectors import LabelSelector

Loc = tuple[str | int, ...]

# --- problems -----------------------------------------------------------------------------------------------------


def problem(message: str, at: str = "") -> PydanticCustomError:
    """One configuration problem: `message` is what the operator reads; `at` a path below the value (`.matchLabels`)."""
    return PydanticCustomError("bgpadv", "{problem}", {"problem": message, "at": at})


def refuse(value: object, problems: Iterable[tuple[Loc, str]]) -> NoReturn:
    """Raise several problems at once, each at a path (`loc`) relative to the value being validated."""
    raise ValidationError.from_exception_data(
        "bgpadv", [InitErrorDetails(type=problem(message), loc=loc, input=value) for loc, message in problems]
    )


class Surroundings(Protocol):
    """What validation may read beyond the document (`bgpadv.config.load` provides it as the validation context)."""

    environ: Mapping[str, str]
    peers: frozenset[IPAddress] | None  # the configured peers, once validated (importRoutes' accept[].peers)

    def secret(self, path: str) -> str:
        """The MD5 password in the file at `path`; raises ValueError (the problem) when it cannot be read or is
        malformed."""
        ...


def surroundings(info: ValidationInfo) -> Surroundings:
    if info.context is None:
        raise TypeError("validate a configuration with bgpadv.config.parse (it reads the environment and secrets)")
    return cast(Surroundings, info.context)


# --- values -------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Between:
    """`Annotated[int, Between(lo, hi)]`: an integer in [lo, hi], never a bool, a float or a string; checked in Python
    first, so an integer too long to print (10**5000) is a plain range error. The JSON Schema states the bounds."""

    lo: int
    hi: int

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        return core_schema.no_info_wrap_validator_function(self._check, core_schema.int_schema(ge=self.lo, le=self.hi))

    def _check(self, value: Any, handler: Callable[[Any], Any]) -> Any:
        if isinstance(value, bool) or not isinstance(value, int):
            raise problem(f"must be an integer, got {brief(value)}")
        if not self.lo <= value <= self.hi:
            raise problem(f"must be between {self.lo} and {self.hi}, got {brief(value)}")
        return handler(value)


@dataclass(frozen=True, slots=True)
class Span:
    """`Annotated[float, Span(lo, hi)]`: a number (integer or float, never a bool) in [lo, hi], held as a float."""

    lo: float
    hi: float

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        return core_schema.no_info_wrap_validator_function(
            self._check, core_schema.float_schema(ge=self.lo, le=self.hi)
        )

    def _check(self, value: Any, handler: Callable[[Any], Any]) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float) or not self.lo <= value <= self.hi:
            raise problem(f"must be a number between {self.lo:g} and {self.hi:g}, got {brief(value)}")
        return float(value)


PLACEHOLDER = "REPLACE-WITH-"
"""How the shipped configurations mark a value the user must write (`deploy/base/bgpadv.yaml`, the image's and the
wheel's example): refused with a message that says so, so nothing starts on a configuration nobody wrote."""


def _address(value: Any) -> IPAddress:
    if isinstance(value, str) and value.startswith(PLACEHOLDER):
        raise problem(
            f"is the shipped placeholder {brief(value)}: write your own configuration with your ToR's address "
            "(bgpadv example-config prints a documented one)"
        )
    try:
        if not isinstance(value, str) or "/" in value:
            raise AddrFormatError(value)
        return IPAddress(value)
    except (AddrFormatError, ValueError, TypeError):
        raise problem(f"must be an IPv4 or IPv6 address, got {brief(value)}") from None


def _unicast(address: IPAddress) -> IPAddress:
    """A BGP endpoint: not unspecified, multicast, limited broadcast, IPv4-mapped or IPv4-compatible IPv6."""
    if address.value == 0:
        raise problem(f"must not be the unspecified address {address}")
    if address.is_multicast() or (address.version == 4 and address.value == 0xFFFFFFFF):
        raise problem(f"must be a unicast address, got {address}")
    if address.version == 6 and address.is_ipv4_mapped():
        raise problem(f"must not be an IPv4-mapped IPv6 address, got {address} (write the IPv4 address)")
    if address.version == 6 and address.value >> 32 == 0 and address.value > 1:  # ::a.b.c.d, not ::1
        raise problem(
            f"must not be an IPv4-compatible IPv6 address (::a.b.c.d, deprecated by RFC 4291 section 2.5.5.1), got "
            f"{address} (write the IPv4 address)"
        )
    return address


def _next_hop(address: IPAddress) -> IPAddress:
    """A next hop: outside every range the special-purpose table refuses for next hops (its `next_hop` column, the
    rule node addresses are held to; `networks.allowSpecialRanges` does not change it)."""
    what = special_address_reason(address.version, int(address))
    if what is not None:
        raise problem(f"{address} lies in {what}, never a next hop")
    return address


def _version(version: int) -> Callable[[IPAddress], IPAddress]:
    def check(address: IPAddress) -> IPAddress:
        if address.version != version:
            raise problem(f"must be an IPv{version} address")
        return address

    return check


def _router_id(address: IPAddress) -> IPAddress:
    if address.version != 4:
        raise problem("must be an IPv4 address")
    if address.value == 0:
        raise problem("must not be 0.0.0.0 (a BGP identifier is non-zero)")
    return address


def _text(value: object) -> str:
    return str(value)


RESERVED_ASNS = {
    23456: "AS_TRANS (RFC 6793), which stands in for a 4-byte AS in a 2-byte field",
    65535: "reserved (RFC 7300)",
    4294967295: "reserved (RFC 7300)",
}
"""AS numbers that are never a network's own (0 is out of range already: RFC 7607)."""
DOCUMENTATION_ASNS = ((64496, 64511), (65536, 65551))
"""AS numbers for documentation (RFC 5398): valid, but `check-config` warns (a copied example, not a real AS)."""


def _asn(asn: int) -> int:
    what = RESERVED_ASNS.get(asn)
    if what is not None:
        raise problem(f"{asn} is {what}: it cannot be a BGP speaker's AS")
    return asn


Asn = Annotated[int, Between(1, 4294967295), AfterValidator(_asn)]
"""An AS number: 1-4294967295, not a reserved one (`RESERVED_ASNS`)."""


_ADDRESS_JSON = {"type": "string", "anyOf": [{"format": "ipv4"}, {"format": "ipv6"}]}
Address = Annotated[
    IPAddress, PlainValidator(_address), PlainSerializer(_text, return_type=str), WithJsonSchema(_ADDRESS_JSON)
]
"""An IPv4 or IPv6 address, as text without a prefix length (a netaddr `IPAddress`)."""
Unicast = Annotated[Address, AfterValidator(_unicast)]
RouterID = Annotated[Address, AfterValidator(_router_id)]
Unicast4 = Annotated[Address, AfterValidator(_version(4)), AfterValidator(_unicast)]
Unicast6 = Annotated[Address, AfterValidator(_version(6)), AfterValidator(_unicast)]
NextHop4 = Annotated[Unicast4, AfterValidator(_next_hop)]
NextHop6 = Annotated[Unicast6, AfterValidator(_next_hop)]


def _prefix(value: Any) -> IPNetwork:
    """importRoutes' prefixes: a CIDR (a bare address is its /32 or /128) with no host bits."""
    try:
        net = IPNetwork(value) if isinstance(value, str) else None
    except (AddrFormatError, ValueError, TypeError):
        net = None
    if net is None or net.ip != net.network:
        raise problem(f"must be a CIDR with no host bits, got {brief(value)}")
    return net


def _cidr(value: Any) -> IPNetwork:
    """networks.secondary's allowed prefixes: ADDRESS/LENGTH with no host bits, never a default route."""
    try:
        if not isinstance(value, str) or "/" not in value:
            raise AddrFormatError(value)
        net = IPNetwork(value)
    except (AddrFormatError, ValueError, TypeError):
        raise problem(f"must be a CIDR such as 10.99.0.0/24, got {brief(value)}") from None
    if net.network != net.ip:
        raise problem(f"has host bits set (write {net.cidr})")
    if net.prefixlen == 0:
        raise problem("must not be a default route")
    return net


_CIDR_JSON = {"type": "string", "pattern": r"^[0-9A-Fa-f:.]+(/[0-9]{1,3})?$"}
Prefix = Annotated[
    IPNetwork, PlainValidator(_prefix), PlainSerializer(_text, return_type=str), WithJsonSchema(_CIDR_JSON)
]
Cidr = Annotated[IPNetwork, PlainValidator(_cidr), PlainSerializer(_text, return_type=str), WithJsonSchema(_CIDR_JSON)]


def _community(large: bool) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        community = normalize_community(value, large)
        if community is None:
            raise problem(f"is not a valid community value: {brief(value)}")
        return community

    return check


Community = Annotated[
    str, PlainValidator(_community(False)), WithJsonSchema({"type": "string", "pattern": r"^[0-9]{1,5}:[0-9]{1,5}$"})
]
LargeCommunity = Annotated[
    str,
    PlainValidator(_community(True)),
    WithJsonSchema({"type": "string", "pattern": r"^[0-9]{1,10}:[0-9]{1,10}:[0-9]{1,10}$"}),
]

# What an ExaBGP configuration can carry between quotes without escaping (the speaker checks it again).
MD5_PASSWORD = re.compile(r"[A-Za-z0-9!#$%&()*+,\-./:<=>?@\[\]^_{|}~]{1,80}")  # use fullmatch
MD5_RULE = "1-80 printable ASCII characters without spaces, quotes or ';'"


def _md5(value: str) -> str:
    if not MD5_PASSWORD.fullmatch(value):
        raise problem(f"must be {MD5_RULE}")
    return value


Md5Password = Annotated[StrictStr, AfterValidator(_md5)]

# The neighbor's description is rendered between double quotes in ExaBGP's configuration: no quote, backslash, `;`,
# braces or control character can reach it.
DESCRIPTION = re.compile(r"[A-Za-z0-9 !#$%&()*+,\-./:<=>?@\[\]^_|~]{1,80}")  # use fullmatch
DESCRIPTION_RULE = "1-80 printable ASCII characters without quotes, backslashes, ';' or braces"


def _description(value: str) -> str:
    if not DESCRIPTION.fullmatch(value) or value.strip() != value:
        raise problem(f"must be {DESCRIPTION_RULE} (no leading or trailing space), got {brief(value)}")
    return value


Description = Annotated[StrictStr, AfterValidator(_description)]

Family = Literal["ipv4 unicast", "ipv6 unicast"]
FAMILIES: tuple[Family, ...] = ("ipv4 unicast", "ipv6 unicast")


def _families(value: Any, handler: Callable[[Any], Any]) -> tuple[str, ...]:
    try:
        families: tuple[str, ...] = handler(value)
    except ValidationError:
        raise problem(f"must be a non-empty list of {', '.join(FAMILIES)}") from None
    repeated = sorted({f for f in families if families.count(f) > 1})
    if repeated:
        raise problem(f"lists {', '.join(repeated)} more than once")
    return families


Families = Annotated[
    tuple[Family, ...], Field(min_length=1, json_schema_extra={"uniqueItems": True}), WrapValidator(_families)
]


def _selector(value: Any) -> LabelSelector:
    selector, problems = selectors.parse(value)
    if problems:
        raise ValidationError.from_exception_data(
            "bgpadv", [InitErrorDetails(type=problem(message, at), loc=(), input=value) for at, message in problems]
        )
    assert selector is not None  # null was left out by _Section
    return selector


_SELECTOR_JSON = {
    "type": "object",
    "additionalProperties": False,
    "description": "A Kubernetes label selector. {} selects everything; a malformed one (a field of the wrong type, "
    "an invalid label key or value, an unknown operator, In/NotIn without values, Exists/DoesNotExist with values) "
    "is refused.",
    "properties": {
        "matchLabels": {
            "type": ["object", "null"],
            "propertyNames": {"pattern": selectors.KEY_PATTERN, "maxLength": 317},
            "additionalProperties": {"type": "string", "pattern": selectors.VALUE_PATTERN},
        },
        "matchExpressions": {
            "type": ["array", "null"],
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["key", "operator"],
                "properties": {
                    "key": {"type": "string", "pattern": selectors.KEY_PATTERN, "maxLength": 317},
                    "operator": {"enum": list(selectors.OPERATORS)},
                    "values": {
                        "type": ["array", "null"],
                        "items": {"type": "string", "pattern": selectors.VALUE_PATTERN},
                    },
                },
                "allOf": [
                    {
                        "if": {"properties": {"operator": {"enum": ["In", "NotIn"]}}},
                        "then": {"required": ["values"], "properties": {"values": {"type": "array", "minItems": 1}}},
                    },
                    {
                        "if": {"properties": {"operator": {"enum": ["Exists", "DoesNotExist"]}}},
                        "then": {"properties": {"values": {"maxItems": 0}}},
                    },
                ],
            },
        },
    },
}
Selector = Annotated[LabelSelector, PlainValidator(_selector), WithJsonSchema(_SELECTOR_JSON)]
"""A Kubernetes label selector (`bgpadv.core.selectors`: Kubernetes semantics, every problem with its path)."""

_LISTEN = re.compile(r"(\[[0-9a-fA-F:.]+\]|[^:\s]*):([0-9]{1,5})")  # fullmatch; ASCII digits only
_LISTEN_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]{0,63})\}:([0-9]{1,5})")  # `${NODE_IP}:9179`
LISTEN_ENV = _LISTEN_ENV
"""A `metrics.listen` of `${VARIABLE}:PORT` (use fullmatch); `config.load` reads it too."""


def _listen(value: str) -> str:
    m = _LISTEN_ENV.fullmatch(value) or _LISTEN.fullmatch(value)
    if m is None or int(m.group(2)) > 65535:
        expected = "HOST:PORT or ${VARIABLE}:PORT" if "${" in value else "HOST:PORT"
        raise problem(f"must be {expected}, got {brief(value)}")
    return value


Listen = Annotated[
    StrictStr,
    AfterValidator(_listen),
    WithJsonSchema({"type": "string", "pattern": r"^(\[[0-9a-fA-F:.]+\]|[^:\s$]*|\$\{[A-Za-z_]\w*\}):[0-9]{1,5}$"}),
]


def _not_in_file(value: Any) -> NoReturn:
    """A field that bgpadv fills in itself (from the environment): refused in the file, absent from the schema."""
    raise PydanticKnownError("extra_forbidden")


def _read_as(file_type: type, build: Callable[[Any], Any]) -> GetPydanticSchema:
    """A field written in the file as `file_type` and held as what `build` makes of it."""
    return GetPydanticSchema(
        lambda _tp, handler: core_schema.no_info_after_validator_function(build, handler.generate_schema(file_type))
    )


# --- sections -----------------------------------------------------------------------------------------------------

_CONFIG = ConfigDict(extra="forbid")


class _Section:
    """What every section shares: `null` for an optional key is the key left out (a section whose keys are all
    commented out, `safety:`, is the defaults); a required key given `null` is reported as such by `load`."""

    __slots__ = ()
    __pydantic_config__ = _CONFIG

    @model_validator(mode="before")
    @classmethod
    def _null_is_omitted(cls, data: Any) -> Any:
        if isinstance(data, dict) and None in data.values():
            return {k: v for k, v in data.items() if v is not None}
        return data


# --- BFD per peer -------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BfdConfig(_Section):
    """`peers[].bfd`: a single-hop BFD session (RFC 5880/5881, UDP 3784) to the peer, run by FRR's `bfdd` under
    `bgpadv run` (`bgpadv.runtime.bfd`). Detection time: multiplier x the slower of our minRx and the peer's
    transmit interval (and the other way round for the peer)."""

    enabled: Annotated[
        StrictBool,
        Field(description="Run a BFD session to the peer; when it goes down, the peer's imported routes leave."),
    ] = False
    min_rx: Annotated[
        Annotated[int, Between(10, 60000)],
        Field(alias="minRx", description="Required minimum receive interval, milliseconds (bfdd receive-interval)."),
    ] = 300
    min_tx: Annotated[
        Annotated[int, Between(10, 60000)],
        Field(alias="minTx", description="Desired minimum transmit interval, milliseconds (bfdd transmit-interval)."),
    ] = 300
    multiplier: Annotated[
        Annotated[int, Between(2, 255)],
        Field(description="Detection multiplier: packets missed before the session is down (bfdd detect-multiplier)."),
    ] = 3


# --- end of BFD ---------------------------------------------------------------------------------------------------


# --- policies and export filters ----------------------------------------------------------------------------------
# Kept in one block: `policies[]` (per network / per VM attributes) and `peers[].exportFilter` (prefix lists).

WellKnownName = Literal["GRACEFUL_SHUTDOWN", "BLACKHOLE", "NO_EXPORT", "NO_ADVERTISE", "NO_EXPORT_SUBCONFED"]
"""`intendedWellKnownCommunities` entries: `bgpadv.config.communities.NAMES`."""

_INTENDED_DESCRIPTION = (
    "The well-known communities among those set here that are meant to reach every route this block reaches: "
    "GRACEFUL_SHUTDOWN (65535:0, RFC 8326), BLACKHOLE (65535:666, RFC 7999), NO_EXPORT, NO_ADVERTISE, "
    "NO_EXPORT_SUBCONFED (65535:65281-65283, RFC 1997). Set by attributes or by a policy that matches every route, "
    "such a community is refused unless listed here; listed, check-config does not warn of it either."
)


IntendedWellKnown = Annotated[
    tuple[WellKnownName, ...], Field(alias="intendedWellKnownCommunities", description=_INTENDED_DESCRIPTION)
]


def _intended_problems(communities: tuple[str, ...], intended: tuple[str, ...]) -> list[tuple[Loc, str]]:
    """An `intendedWellKnownCommunities` entry must name a community the block sets."""
    set_here = {w.name for _, w in well_known.named(communities)}
    return [
        (("intendedWellKnownCommunities", i), f"lists {name}, which communities does not set")
        for i, name in enumerate(intended)
        if name not in set_here
    ]


SpecialRangeGroup = Literal["documentation", "benchmarking"]
"""`networks.allowSpecialRanges` entries: `bgpadv.core.addressing.OPT_IN_GROUPS`."""

RouteKindName = Literal["subnet", "host"]
ROUTE_KIND_NAMES: tuple[RouteKindName, ...] = ("subnet", "host")
FilterAction = Literal["allow", "deny"]


@dataclass(frozen=True, slots=True)
class PolicyMatch(_Section):
    """`policies[].match`: which routes a policy sets attributes on. Every key given must match (AND); an omitted key
    matches everything. `vmSelector` and `namespaceSelector` describe a VM, so they match host routes only."""

    kinds: Annotated[
        tuple[RouteKindName, ...],
        Field(description="Route kinds: subnet (a network's subnets) and/or host (a VM's /32 or /128); omitted: both."),
    ] = ()
    networks: Annotated[
        tuple[StrictStr, ...], Field(description="ClusterUserDefinedNetwork names; omitted: every network.")
    ] = ()
    network_selector: Annotated[
        Selector | None, Field(alias="networkSelector", description="A label selector on the CUDN's labels.")
    ] = None
    vm_selector: Annotated[
        Selector | None,
        Field(
            alias="vmSelector",
            description="A label selector on the VirtualMachineInstance's labels (a VM's spec.template.metadata."
            'labels, e.g. bgpadv.io/wave: "3"); host routes only.',
        ),
    ] = None
    namespace_selector: Annotated[
        Selector | None,
        Field(alias="namespaceSelector", description="A label selector on the VM's Namespace labels (host routes)."),
    ] = None

    @property
    def describes_vm(self) -> bool:
        return self.vm_selector is not None or self.namespace_selector is not None

    @property
    def reachable(self) -> tuple[str, ...]:
        """The route kinds this match can take."""
        kinds = self.kinds or ROUTE_KIND_NAMES
        return tuple(k for k in kinds if k == "host" or not self.describes_vm)

    @property
    def every_route_of_a_kind(self) -> bool:
        """Whether it takes every route of the kinds it can take (no network named, every selector empty)."""
        everything = LabelSelector()
        selectors_ = (self.network_selector, self.vm_selector, self.namespace_selector)
        return not self.networks and all(s is None or s == everything for s in selectors_)

    @model_validator(mode="after")
    def _rules(self) -> Self:
        problems: list[tuple[Loc, str]] = []
        if len(set(self.kinds)) != len(self.kinds):
            problems.append((("kinds",), "lists a kind more than once"))
        if self.describes_vm and "subnet" in self.kinds:
            which = "vmSelector" if self.vm_selector is not None else "namespaceSelector"
            problems.append((("kinds",), f"a subnet belongs to no VM: {which} matches host routes only"))
        if problems:
            refuse(self, problems)
        return self


@dataclass(frozen=True, slots=True)
class PolicySet(_Section):
    """`policies[].set`: the attributes a matching policy sets (each omitted key leaves the attribute as it was)."""

    local_preference: Annotated[
        Annotated[int, Between(0, 4294967295)] | None,
        Field(alias="localPreference", description="LOCAL_PREF, sent to iBGP peers only."),
    ] = None
    med: Annotated[Annotated[int, Between(0, 4294967295)] | None, Field(description="MULTI_EXIT_DISC.")] = None
    communities: Annotated[tuple[Community, ...], Field(description="ASN:VALUE, added.")] = ()
    large_communities: Annotated[
        tuple[LargeCommunity, ...], Field(alias="largeCommunities", description="GLOBAL:LOCAL1:LOCAL2, added.")
    ] = ()
    as_path_prepend: Annotated[
        Annotated[int, Between(0, 10)] | None,
        Field(alias="asPathPrepend", description="Extra copies of the local AS (eBGP only)."),
    ] = None
    intended_well_known: IntendedWellKnown = ()

    @model_validator(mode="after")
    def _intended(self) -> Self:
        problems = _intended_problems(self.communities, self.intended_well_known)
        if problems:
            refuse(self, problems)
        return self


@dataclass(frozen=True, slots=True)
class Policy(_Section):
    """`policies[]`: path attributes for the routes a policy matches. Precedence: every matching policy applies, in
    the order of the list, over `attributes`: a later policy's localPreference, med or asPathPrepend replaces an
    earlier one's; communities and large communities add up (each once, in first-seen order)."""

    name: Annotated[StrictStr, Field(min_length=1, description="The policy's name (logs, render).")]
    actions: Annotated[PolicySet, Field(alias="set", description="The attributes it sets.")]
    match: Annotated[PolicyMatch, Field(description="The routes it applies to; omitted: every route.")] = field(
        default_factory=PolicyMatch
    )

    @model_validator(mode="after")
    def _every_route(self) -> Self:
        """A well-known community (`bgpadv.config.communities`) on every route of some kind needs saying so."""
        if not self.match.every_route_of_a_kind:
            return self
        routes = f"every {' and '.join(self.match.reachable)} route"
        where = f"policy {self.name!r}, whose match takes {routes},"
        problems: list[tuple[Loc, str]] = [
            (("set", "communities", i), well_known.every_route_problem(w, where, routes))
            for i, w in well_known.unintended(self.actions.communities, self.actions.intended_well_known)
        ]
        if problems:
            refuse(self, problems)
        return self


def _filter_width(prefix: IPNetwork) -> int:
    return 32 if prefix.version == 4 else 128


@dataclass(frozen=True, slots=True)
class PrefixRule(_Section):
    """One entry of a prefix list (`peers[].exportFilter.rules[]`), as FRR's `ip prefix-list`: without `ge`/`le` the
    prefix itself only; with them, the prefixes inside `prefix` whose length is within [ge (default: prefix's
    length), le (default: 32 or 128)]."""

    prefix: Annotated[Prefix, Field(description="The range (a CIDR with no host bits).")]
    action: Annotated[FilterAction, Field(description="allow or deny what matches.")] = "allow"
    ge: Annotated[Annotated[int, Between(0, 128)] | None, Field(description="The shortest length matched.")] = None
    le: Annotated[Annotated[int, Between(0, 128)] | None, Field(description="The longest length matched.")] = None

    @property
    def lengths(self) -> tuple[int, int]:
        """(shortest, longest) prefix length matched."""
        if self.ge is None and self.le is None:
            return self.prefix.prefixlen, self.prefix.prefixlen
        lo = self.ge if self.ge is not None else self.prefix.prefixlen
        return lo, self.le if self.le is not None else _filter_width(self.prefix)

    @model_validator(mode="after")
    def _rules(self) -> Self:
        width, length = _filter_width(self.prefix), self.prefix.prefixlen
        problems: list[tuple[Loc, str]] = []
        for key, value in (("ge", self.ge), ("le", self.le)):
            if value is not None and not length <= value <= width:
                problems.append(((key,), f"must be between the prefix length {length} and {width}, got {value}"))
        if not problems and self.ge is not None and self.le is not None and self.ge > self.le:
            problems.append((("le",), f"must be at least ge ({self.ge}), got {self.le}"))
        if problems:
            refuse(self, problems)
        return self


@dataclass(frozen=True, slots=True)
class ExportFilter(_Section):
    """`peers[].exportFilter`: which routes the peer gets, as a prefix list: the first rule that matches decides;
    when none does, `defaultAction` (deny, as FRR's implicit deny at the end of a prefix list)."""

    rules: Annotated[tuple[PrefixRule, ...], Field(min_length=1, description="Tried in order; the first match wins.")]
    default_action: Annotated[
        FilterAction, Field(alias="defaultAction", description="What happens to a route no rule matches.")
    ] = "deny"


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
        version = IPAddress(peer_address).version if isinstance(peer_address, str) else None
    except (AddrFormatError, ValueError):
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
    addresses: list[IPAddress] = []
    for text in value.split(","):
        try:
            addresses.append(IPAddress(text.strip(), flags=0))
        except (AddrFormatError, ValueError):
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
            "passive, ebgpMultihop or BFD. See docs/unnumbered.md.",
        ),
    ] = None
    on_link: Annotated[IPAddress | None, PlainValidator(_not_in_file), SkipJsonSchema()] = None
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
    self_addresses: Annotated[tuple[IPAddress, ...], PlainValidator(_not_in_file), SkipJsonSchema()] = ()
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
        problems += unnumbered.interface_problems(
            self.interface, address, local, self.passive, self.ebgp_multihop, self.bfd.enabled
        )
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


def _is_link_local6(address: IPAddress) -> bool:
    return bool(address.version == 6 and address.is_link_local())


def _session_problems(address: IPAddress, local: IPAddress | None) -> list[tuple[Loc, str]]:
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


DEFAULT_MAX_ADDRESSES_PER_INTERFACE = 4
"""Guest-reported addresses taken per VMI interface of an IPAM-less secondary network, unless configured."""


@dataclass(frozen=True, slots=True)
class SecondaryNetworkConfig(_Section):
    """What bgpadv may announce for one IPAM-less secondary Layer2 CUDN (`networks.secondary[]`).

    `allowed_prefixes`: the only ranges a guest-reported address may lie in (with a CUDN subnet, both bound it; without
    one, nothing of the network is announced unless they are given). `max_addresses_per_interface`: the most
    addresses taken from one VMI interface (a guest reports anything; the rest is refused).
    """

    name: Annotated[StrictStr, Field(description="The name of a ClusterUserDefinedNetwork (role Secondary, no IPAM).")]
    allowed_prefixes: Annotated[
        tuple[Cidr, ...],
        Field(alias="allowedPrefixes", description="The only ranges a guest-reported address may lie in."),
    ] = ()
    max_addresses_per_interface: Annotated[
        Annotated[int, Between(1, 64)],
        Field(
            alias="maxAddressesPerInterface",
            description="The most addresses taken per VMI interface; the rest is refused (too-many-addresses).",
        ),
    ] = DEFAULT_MAX_ADDRESSES_PER_INTERFACE

    @field_validator("name", mode="after")
    @classmethod
    def _name(cls, name: str) -> str:
        if not name:
            raise problem(f"is required: the name of a ClusterUserDefinedNetwork, got {brief(name)}")
        return name


def _unique(
    key: Callable[[Any], Any], loc: Callable[[int], Loc], said: Callable[[Any], str]
) -> Callable[[tuple[Any, ...]], tuple[Any, ...]]:
    """A list whose entries' `key` is unique: each repeat is a problem at `loc(index)`."""

    def check(entries: tuple[Any, ...]) -> tuple[Any, ...]:
        seen: set[Any] = set()
        problems = []
        for i, entry in enumerate(entries):
            k = key(entry)
            if k in seen:
                problems.append((loc(i), said(k)))
            seen.add(k)
        if problems:
            refuse(entries, problems)
        return entries

    return check


@dataclass(frozen=True, slots=True)
class NetworksConfig(_Section):
    """Which ClusterUserDefinedNetworks to advertise, and what (`networks`)."""

    selector: Annotated[
        Selector | None,
        Field(description="Label selector on the CUDNs' metadata.labels; omitted: every CUDN."),
    ] = None
    follow_route_advertisements: Annotated[
        StrictBool,
        Field(
            alias="followRouteAdvertisements",
            description="A CUDN must also be selected by an Accepted OVN-K RouteAdvertisements advertising PodNetwork.",
        ),
    ] = False
    allow_special_ranges: Annotated[
        tuple[SpecialRangeGroup, ...],
        AfterValidator(_unique(lambda g: g, lambda i: (i,), lambda g: f"{g!r} is listed twice")),
        Field(
            alias="allowSpecialRanges",
            description="Special-purpose ranges allowed as network space (CUDN subnets, announced prefixes): "
            "documentation (192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24, 2001:db8::/32, 3fff::/20) and/or "
            "benchmarking (198.18.0.0/15, 2001:2::/48), for labs and examples that use them. Omitted: refused, "
            "as every other special-purpose range always is. Never next hops: node and nextHopSelf addresses in "
            "them stay refused.",
        ),
    ] = ()
    subnets: Annotated[StrictBool, Field(description="Announce the UDN subnets.")] = True
    host_routes: Annotated[
        StrictBool, Field(alias="hostRoutes", description="Announce one /32 or /128 per address of every running VM.")
    ] = True
    pod_network_addresses: Annotated[
        StrictBool,
        Field(
            alias="podNetworkAddresses",
            description="VMs without an IPAMClaim on a primary CUDN: their addresses from OVN-K's "
            "k8s.ovn.org/pod-networks annotation of the launcher pod (a claim, when present, wins).",
        ),
    ] = True
    secondary: Annotated[
        tuple[SecondaryNetworkConfig, ...],
        AfterValidator(_unique(lambda s: s.name, lambda i: (i, "name"), lambda name: f"{name} is listed twice")),
        Field(description="IPAM-less secondary Layer2 CUDNs: the guests configure their own addresses."),
    ] = ()


@dataclass(frozen=True, slots=True)
class KubernetesConfig(_Section):
    """How to reach the Kubernetes API (`kubernetes`)."""

    kubeconfig: Annotated[
        StrictStr | None, Field(description="A kubeconfig file; omitted: in-cluster credentials, then $KUBECONFIG.")
    ] = None
    context: Annotated[StrictStr | None, Field(description="The kubeconfig context.")] = None


@dataclass(frozen=True, slots=True)
class MetricsConfig(_Section):
    """Prometheus metrics, /healthz, /readyz and /status (`metrics`)."""

    listen: Annotated[
        Listen,
        Field(
            description="HOST:PORT, or ${VARIABLE}:PORT with the host from an environment variable (unset: an "
            "error), e.g. ${BGPADV_NODE_IP}:9179."
        ),
    ] = "0.0.0.0:9179"  # `${VAR}:PORT` already resolved from the environment
    listen_from_env: Annotated[str | None, SkipJsonSchema(), PlainValidator(_not_in_file)] = None
    """The variable the host came from (`${BGPADV_NODE_IP}:9179`), if any."""

    @property
    def host_port(self) -> tuple[str, int]:
        host, _, port = self.listen.rpartition(":")
        return host.strip("[]") or "0.0.0.0", int(port)

    @model_validator(mode="after")
    def _from_environment(self, info: ValidationInfo) -> Self:
        """`${VAR}:PORT` → `<value of VAR>:PORT`: the listener on an address only the pod's environment knows (the
        node's address, `status.hostIP` through the downward API)."""
        m = _LISTEN_ENV.fullmatch(self.listen)
        if m is None:
            return self
        name, port = m.group(1), m.group(2)
        value = surroundings(info).environ.get(name, "")
        if not value:
            refuse(
                self,
                [(("listen",), f"the environment variable {name} is not set (the pod sets it from status.hostIP)")],
            )
        try:
            host = IPAddress(value)
        except (AddrFormatError, ValueError):
            refuse(
                self, [(("listen",), f"the environment variable {name} must hold an IP address, got {brief(value)}")]
            )
        listen = f"[{host}]:{port}" if host.version == 6 else f"{host}:{port}"
        return dataclasses.replace(self, listen=listen, listen_from_env=name)


@dataclass(frozen=True, slots=True)
class ExaBGPConfig(_Section):
    """Knobs for the ExaBGP process bgpadv runs (`exabgp`); defaults follow the measured facts in the reference
    notes."""

    reactor_speed: Annotated[
        Annotated[float, Span(0.001, 10)],
        Field(alias="reactorSpeed", description="exabgp.reactor.speed (s): lower = faster bulk loads, more idle CPU."),
    ] = 0.1
    max_inflight: Annotated[
        Annotated[int, Between(1, 10000)],
        Field(alias="maxInflight", description="Commands written to ExaBGP and not yet acknowledged."),
    ] = 100
    chunk_prefixes: Annotated[
        Annotated[int, Between(1, 5000)], Field(alias="chunkPrefixes", description="Prefixes per bulk command line.")
    ] = 1000
    runtime: Annotated[
        Literal["auto", "cpython", "pypy"],
        Field(
            description="The interpreter ExaBGP runs under: pypy (Debian's pypy3 on PATH, running the ExaBGP "
            "installed beside bgpadv), cpython (bgpadv's own), auto (pypy when pypy3 is found, else cpython).",
        ),
    ] = "cpython"
    listen_port: Annotated[
        Annotated[int, Between(1, 65535)],
        Field(
            alias="listenPort",
            description="exabgp.tcp.port: where passive peers connect (on each passive peer's localAddress); "
            "below 1024 needs UID 0 or CAP_NET_BIND_SERVICE.",
        ),
    ] = 179


@dataclass(frozen=True, slots=True)
class MinPrefixLength(_Section):
    """`safety.minPrefixLength`: no route shorter than this per family is ever announced."""

    ipv4: Annotated[
        Annotated[int, Between(1, 32)], Field(description="A /8 from a cluster is a mistake, a /0 a hijack.")
    ] = 16
    ipv6: Annotated[Annotated[int, Between(1, 128)], Field(description="The IPv6 limit.")] = 48


@dataclass(frozen=True, slots=True)
class SafetyConfig(_Section):
    """Limits that keep a wrong or partial view of the cluster off the fabric (the `safety` section).

    Defaults are chosen for a production fabric edge; `config/bgpadv.yaml` documents each.
    """

    min_prefix_length: Annotated[
        MinPrefixLength,
        Field(alias="minPrefixLength", description="No route shorter than this per family is ever announced."),
    ] = field(default_factory=MinPrefixLength)
    max_withdraw_fraction: Annotated[
        Annotated[float, Span(0.0, 1.0)],
        Field(
            alias="maxWithdrawFraction",
            description="A relist or full replan that would withdraw more than this fraction of a peer's routes "
            "withdraws none of them (fail static).",
        ),
    ] = 0.5
    hold_seconds: Annotated[
        Annotated[float, Span(60.0, 86400.0)],
        Field(
            alias="holdSeconds",
            description="Held withdrawals go only when a full LIST at least this much later still agrees.",
        ),
    ] = 120.0
    deletion_settle_seconds: Annotated[
        Annotated[float, Span(0.0, 10.0)],
        Field(
            alias="deletionSettleSeconds",
            description="Withdrawals caused by deletion events go out once deletions paused this long (at most 10 s "
            "after the first), so a mass deletion (a CRD deleted) is seen whole before any of it is withdrawn; "
            "announcements never wait. 0: at once.",
        ),
    ] = 1.0
    max_routes: Annotated[
        Annotated[int, Between(1, 10_000_000)],
        Field(alias="maxRoutes", description="Max-prefix per peer: beyond it the newest routes are refused."),
    ] = 200_000
    drain_seconds: Annotated[
        Annotated[float, Span(0.0, 3600.0)],
        Field(
            alias="drainSeconds",
            description="On SIGTERM: how long routes stay announced with GRACEFUL_SHUTDOWN (65535:0) before the "
            "speaker stops.",
        ),
    ] = 30.0

    @property
    def min_prefix_length_v4(self) -> int:
        return self.min_prefix_length.ipv4

    @property
    def min_prefix_length_v6(self) -> int:
        return self.min_prefix_length.ipv6


# OVN-Kubernetes' internal ranges, as its defaults set them: join `Gateway.V4JoinSubnet`/`V6JoinSubnet` and transit
# `ClusterManager.V4TransitSubnet`/`V6TransitSubnet` in go-controller/pkg/config/config.go; masquerade as deployed
# with UDNs (`--v4-masquerade-subnet=169.254.0.0/17`, `--v6-masquerade-subnet=fd69::/112` in OVN-K's daemonset and
# Helm values, and `defaultV4MasqueradeSubnet`/`defaultV6MasqueradeSubnet` of the cluster-network-operator; the
# /29 and /125 of config.go's own defaults leave no room for UDN masquerade addresses and lie inside these).
OVN_JOIN_SUBNETS = (IPNetwork("100.64.0.0/16"), IPNetwork("fd98::/64"))
OVN_TRANSIT_SUBNETS = (IPNetwork("100.88.0.0/16"), IPNetwork("fd97::/64"))
OVN_MASQUERADE_SUBNETS = (IPNetwork("169.254.0.0/17"), IPNetwork("fd69::/112"))


@dataclass(frozen=True, slots=True)
class OvnKubernetesConfig(_Section):
    """OVN-Kubernetes' internal ranges (`ovnKubernetes`): no selected network may overlap one
    (`overlaps-ovn-internal`). The defaults are OVN-K's; set them as the cluster sets `--v4-join-subnet`,
    `--v4-transit-subnet`, `--v4-masquerade-subnet` and their IPv6 twins (an empty list checks nothing)."""

    join_subnets: Annotated[
        tuple[Cidr, ...],
        Field(
            alias="joinSubnets",
            description="OVN-K's join subnets (--v4/v6-join-subnet).",
            json_schema_extra={"default": [str(p) for p in OVN_JOIN_SUBNETS]},
        ),
    ] = field(default_factory=lambda: OVN_JOIN_SUBNETS)
    transit_subnets: Annotated[
        tuple[Cidr, ...],
        Field(
            alias="transitSubnets",
            description="OVN-K's transit subnets (--v4/v6-transit-subnet).",
            json_schema_extra={"default": [str(p) for p in OVN_TRANSIT_SUBNETS]},
        ),
    ] = field(default_factory=lambda: OVN_TRANSIT_SUBNETS)
    masquerade_subnets: Annotated[
        tuple[Cidr, ...],
        Field(
            alias="masqueradeSubnets",
            description="OVN-K's masquerade subnets (--v4/v6-masquerade-subnet).",
            json_schema_extra={"default": [str(p) for p in OVN_MASQUERADE_SUBNETS]},
        ),
    ] = field(default_factory=lambda: OVN_MASQUERADE_SUBNETS)

    def internal(self) -> tuple[tuple[IPNetwork, str], ...]:
        """Every internal range with what it is, for refusals."""
        return (
            *((n, "OVN-K's join subnet") for n in self.join_subnets),
            *((n, "OVN-K's transit subnet") for n in self.transit_subnets),
            *((n, "OVN-K's masquerade subnet") for n in self.masquerade_subnets),
        )


ACCEPT_DEFAULT_ROUTE = (IPNetwork("0.0.0.0/0"), IPNetwork("::/0"))


@dataclass(frozen=True, slots=True)
class AcceptRule(_Section):
    """Import a learned prefix inside `prefix` whose length is at most `max_length` (None: exactly `prefix`), from
    the peers in `peers` (empty: every configured peer)."""

    prefix: Annotated[Prefix, Field(description="The range a learned prefix must lie in.")]
    max_length: Annotated[
        Annotated[int, Between(0, 128)] | None,
        Field(alias="maxLength", description="The longest prefix length accepted; omitted: exactly prefix."),
    ] = None
    peers: Annotated[
        tuple[Address, ...], Field(description="Learned from these configured peers only; omitted: every peer.")
    ] = ()

    @model_validator(mode="after")
    def _rules(self, info: ValidationInfo) -> Self:
        problems: list[tuple[Loc, str]] = []
        width = 32 if self.prefix.version == 4 else 128
        if self.max_length is not None and not self.prefix.prefixlen <= self.max_length <= width:
            problems.append(
                (("maxLength",), f"must be between {self.prefix.prefixlen} and {width}, got {self.max_length}")
            )
        known = surroundings(info).peers
        if known is not None:
            for k, peer in enumerate(self.peers):
                if peer not in known:
                    problems.append((("peers", k), f"must be a configured peer's address, got {brief(str(peer))}"))
        if problems:
            refuse(self, problems)
        return self


@dataclass(frozen=True, slots=True)
class ImportNetwork(_Section):
    """One network whose routing table receives the ToR's routes (`importRoutes.networks[]`).

    `name`: the CUDN's name; its VRF is found by name (OVN-K's rule, `bgpadv.importer.netlink.vrf_name`) unless
    `table` is set. `network_id`: OVN-K's network ID, needed for a name longer than 15 characters when the CUDN
    does not carry the `k8s.ovn.org/network-id` annotation. `external`: not a CUDN (an operator's own VRF): needs
    `table`; its `exclude` subnets replace the CUDN's. `accept`: the import policy; the default imports only the
    default routes (0.0.0.0/0, ::/0) from every peer.
    """

    name: Annotated[StrictStr, Field(min_length=1, description="The CUDN's name (or the external network's).")]
    table: Annotated[
        Annotated[int, Between(1, 4294967295)] | None,
        Field(description="The routing table; omitted: the CUDN's VRF's, found by name. Required when external."),
    ] = None
    network_id: Annotated[
        Annotated[int, Between(0, 65535)] | None,
        Field(
            alias="networkID",
            description="OVN-K's network ID: needed for a name over 15 characters when the CUDN has no "
            "k8s.ovn.org/network-id annotation.",
        ),
    ] = None
    external: Annotated[StrictBool, Field(description="Not a CUDN: an operator's own VRF (needs table).")] = False
    exclude: Annotated[
        tuple[Prefix, ...], Field(description="Subnets never imported (an external network's own subnets).")
    ] = ()
    accept: Annotated[
        tuple[AcceptRule, ...],
        Field(
            description="The import policy; omitted: only the default routes, from every peer.",
            json_schema_extra={"default": [{"prefix": str(p)} for p in ACCEPT_DEFAULT_ROUTE]},
        ),
    ] = field(default_factory=lambda: tuple(AcceptRule(p) for p in ACCEPT_DEFAULT_ROUTE))

    @field_validator("table", mode="after")
    @classmethod
    def _table(cls, table: int | None) -> int | None:
        if table in (253, 254, 255):
            raise problem("must not be the default, main or local table")
        return table

    @model_validator(mode="after")
    def _rules(self) -> Self:
        if self.external and self.table is None:
            refuse(self, [(("table",), "is required for an external network")])
        return self


def _one_table_each(networks: tuple[ImportNetwork, ...]) -> tuple[ImportNetwork, ...]:
    """Two import networks never share a kernel table: each reconcile would delete the other's routes (endless
    churn). Compared: explicit tables, and the VRF names OVN-K gives (the name, or `mp<networkID>-udn-vrf` for a
    name over 15 characters)."""
    problems: list[tuple[Loc, str]] = []
    tables: dict[int, int] = {}
    vrfs: dict[str, int] = {}
    for i, net in enumerate(networks):
        if net.table is not None:
            first = tables.setdefault(net.table, i)
            if first != i:
                problems.append(
                    (
                        (i, "table"),
                        f"table {net.table} is also networks[{first}]'s ({networks[first].name!r}): two networks in "
                        "one kernel table delete each other's routes on every reconcile",
                    )
                )
            continue
        if net.external:
            continue
        vrf = net.name if len(net.name) <= 15 else None if net.network_id is None else f"mp{net.network_id}-udn-vrf"
        if vrf is None:
            continue
        first = vrfs.setdefault(vrf, i)
        if first != i:
            problems.append(
                (
                    (i, "networkID" if len(net.name) > 15 else "name"),
                    f"its VRF {vrf!r} is also networks[{first}]'s ({networks[first].name!r}): two networks in one "
                    "kernel table delete each other's routes on every reconcile",
                )
            )
    if problems:
        refuse(networks, problems)
    return networks


@dataclass(frozen=True, slots=True)
class ImportConfig(_Section):
    """`importRoutes`: the ToR's routes into each listed network's routing table, protocol 186 (off by default)."""

    enabled: Annotated[StrictBool, Field(description="Import the ToR's routes.")] = False
    networks: Annotated[
        tuple[ImportNetwork, ...],
        AfterValidator(_unique(lambda n: n.name, lambda i: (i, "name"), lambda name: f"{name!r} is listed twice")),
        AfterValidator(lambda networks: _one_table_each(networks)),
        Field(description="The networks whose routing table receives the ToR's routes (one table each)."),
    ] = ()
    max_routes: Annotated[
        Annotated[int, Between(1, 1_000_000)],
        Field(alias="maxRoutes", description="Per network and family; the longest prefixes beyond it are left out."),
    ] = 1000
    reconcile_seconds: Annotated[
        Annotated[float, Span(1.0, 3600.0)],
        Field(alias="reconcileSeconds", description="The periodic level-based repair (kernel dump, VRF lookup)."),
    ] = 10.0


_ATTRIBUTES = Attributes()


@dataclass(frozen=True, slots=True)
class PathAttributes(_Section):
    """`attributes`: path attributes added to every route (held as `bgpadv.core.model.Attributes`)."""

    local_preference: Annotated[Annotated[int, Between(0, 4294967295)] | None, Field(alias="localPreference")] = (
        _ATTRIBUTES.local_preference
    )
    med: Annotated[Annotated[int, Between(0, 4294967295)] | None, Field(description="MULTI_EXIT_DISC.")] = (
        _ATTRIBUTES.med
    )
    communities: Annotated[tuple[Community, ...], Field(description="ASN:VALUE")] = _ATTRIBUTES.communities
    large_communities: Annotated[
        tuple[LargeCommunity, ...], Field(alias="largeCommunities", description="GLOBAL:LOCAL1:LOCAL2")
    ] = _ATTRIBUTES.large_communities
    as_path_prepend: Annotated[
        Annotated[int, Between(0, 10)],
        Field(alias="asPathPrepend", description="How many times the local AS is prepended."),
    ] = _ATTRIBUTES.as_path_prepend
    intended_well_known: IntendedWellKnown = ()

    @model_validator(mode="after")
    def _well_known(self) -> Self:
        """Every route of every peer carries these: a well-known community here needs saying so."""
        problems = _intended_problems(self.communities, self.intended_well_known)
        problems += [
            (("communities", i), well_known.every_route_problem(w, "attributes"))
            for i, w in well_known.unintended(self.communities, self.intended_well_known)
        ]
        if problems:
            refuse(self, problems)
        return self

    def held(self) -> Attributes:
        return Attributes(
            **{f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "intended_well_known"}
        )


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

    def held(self) -> tuple[IPAddress, ...]:
        return tuple(a for a in (self.ipv4, self.ipv6) if a is not None)


NODE_NAME_ENV = "BGPADV_NODE_NAME"
"""The environment variable that names an instance's node in per-node mode (the DaemonSet sets it from the downward
API, `spec.nodeName`)."""

MODES = ("cluster", "per-node")

# --- session status in the API (BGPSessionState objects) ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SessionStateConfig(_Section):
    """One `BGPSessionState` object (bgpadv.io/v1alpha1) per instance and peer in the pod's namespace (`sessionState`;
    the CRD and a namespaced Role ship in deploy/)."""

    enabled: Annotated[
        StrictBool,
        Field(description="Write the objects (the CRD must be installed; without it bgpadv logs once and retries)."),
    ] = True
    interval_seconds: Annotated[
        Annotated[float, Span(1.0, 3600.0)],
        Field(
            alias="intervalSeconds",
            description="Route counters are written at most this often per object; a state change, an error or a "
            "NOTIFICATION is written at once.",
        ),
    ] = 30.0
    namespace: Annotated[
        StrictStr | None,
        Field(
            min_length=1,
            description="Where the objects live; omitted: the pod's namespace (BGPADV_POD_NAMESPACE, then the "
            "service account's), else bgpadv.",
        ),
    ] = None


# --- end of session status ----------------------------------------------------------------------------------------


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
        tuple[IPAddress, ...],
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

    def self_address(self, version: int) -> IPAddress | None:
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
