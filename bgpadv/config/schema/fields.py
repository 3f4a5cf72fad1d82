"""What every section of the configuration is built from: how a problem is reported (`problem`, `refuse`, at a
field path), what validation may read beyond the document (`Surroundings`), the value types shared by several
sections (integers in bounds, addresses, prefixes, communities, selectors, listen addresses) and `_Section`, the base
of every section.

Addresses and prefixes are held as `bgpadv.core.prefix` values, the one form every layer uses up to the wire. A prefix
is read with netaddr, the only use of it in bgpadv: it accepts the forms a configuration has always accepted (a
netmask, `10.0.0.0/255.255.0.0`, and spaces around the length among them), which `Prefix.parse`, strict as a
route must be, refuses; the value is converted once, here.
"""

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal, NoReturn, Protocol, cast

from netaddr import AddrFormatError, IPNetwork
from pydantic import (
    AfterValidator,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    GetPydanticSchema,
    PlainSerializer,
    PlainValidator,
    StrictStr,
    ValidationError,
    ValidationInfo,
    WithJsonSchema,
    WrapValidator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError, PydanticKnownError, core_schema

from bgpadv.core import selectors
from bgpadv.core.addressing import special_address_reason
from bgpadv.core.bounded import brief
from bgpadv.core.model import normalize_community
from bgpadv.core.prefix import Address, Prefix
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
    peers: frozenset[Address] | None  # the configured peers, once validated (importRoutes' accept[].peers)

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


def _address(value: Any) -> Address:
    if isinstance(value, str) and value.startswith(PLACEHOLDER):
        raise problem(
            f"is the shipped placeholder {brief(value)}: write your own configuration with your ToR's address "
            "(bgpadv example-config prints a documented one)"
        )
    try:
        return Address.parse(value)
    except ValueError:
        raise problem(f"must be an IPv4 or IPv6 address, got {brief(value)}") from None


def _unicast(address: Address) -> Address:
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


def _next_hop(address: Address) -> Address:
    """A next hop: outside every range the special-purpose table refuses for next hops (its `next_hop` column, the
    rule node addresses are held to; `networks.allowSpecialRanges` does not change it)."""
    what = special_address_reason(address.version, address.value)
    if what is not None:
        raise problem(f"{address} lies in {what}, never a next hop")
    return address


def _version(version: int) -> Callable[[Address], Address]:
    def check(address: Address) -> Address:
        if address.version != version:
            raise problem(f"must be an IPv{version} address")
        return address

    return check


def _router_id(address: Address) -> Address:
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
AnyAddress = Annotated[
    Address, PlainValidator(_address), PlainSerializer(_text, return_type=str), WithJsonSchema(_ADDRESS_JSON)
]
"""An IPv4 or IPv6 address, as text without a prefix length (held as a `bgpadv.core.prefix.Address`)."""
Unicast = Annotated[AnyAddress, AfterValidator(_unicast)]
RouterID = Annotated[AnyAddress, AfterValidator(_router_id)]
Unicast4 = Annotated[AnyAddress, AfterValidator(_version(4)), AfterValidator(_unicast)]
Unicast6 = Annotated[AnyAddress, AfterValidator(_version(6)), AfterValidator(_unicast)]
NextHop4 = Annotated[Unicast4, AfterValidator(_next_hop)]
NextHop6 = Annotated[Unicast6, AfterValidator(_next_hop)]


def _held(net: IPNetwork) -> Prefix:
    """A prefix netaddr read, its host bits checked zero, as the `Prefix` the rest of bgpadv holds."""
    return Prefix(net.version, net.first, net.prefixlen)


def _prefix(value: Any) -> Prefix:
    """importRoutes' prefixes: a CIDR (a bare address is its /32 or /128) with no host bits."""
    try:
        net = IPNetwork(value) if isinstance(value, str) else None
    except (AddrFormatError, ValueError, TypeError):
        net = None
    if net is None or net.ip != net.network:
        raise problem(f"must be a CIDR with no host bits, got {brief(value)}")
    return _held(net)


def _cidr(value: Any) -> Prefix:
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
    return _held(net)


_CIDR_JSON = {"type": "string", "pattern": r"^[0-9A-Fa-f:.]+(/[0-9]{1,3})?$"}
RoutePrefix = Annotated[
    Prefix, PlainValidator(_prefix), PlainSerializer(_text, return_type=str), WithJsonSchema(_CIDR_JSON)
]
Cidr = Annotated[Prefix, PlainValidator(_cidr), PlainSerializer(_text, return_type=str), WithJsonSchema(_CIDR_JSON)]


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
