"""`importRoutes`: the ToR's routes into each listed network's routing table, and the accept rules that say which."""

from dataclasses import dataclass, field
from typing import Annotated, Self

from pydantic import (
    AfterValidator,
    Field,
    StrictBool,
    StrictStr,
    ValidationInfo,
    field_validator,
    model_validator,
)

from bgpadv.config.schema.fields import (
    AnyAddress,
    Between,
    Loc,
    RoutePrefix,
    Span,
    _Section,
    _unique,
    problem,
    refuse,
    surroundings,
)
from bgpadv.core.bounded import brief
from bgpadv.core.prefix import Prefix

ACCEPT_DEFAULT_ROUTE = (Prefix.parse("0.0.0.0/0"), Prefix.parse("::/0"))


@dataclass(frozen=True, slots=True)
class AcceptRule(_Section):
    """Import a learned prefix inside `prefix` whose length is at most `max_length` (None: exactly `prefix`), from
    the peers in `peers` (empty: every configured peer)."""

    prefix: Annotated[RoutePrefix, Field(description="The range a learned prefix must lie in.")]
    max_length: Annotated[
        Annotated[int, Between(0, 128)] | None,
        Field(alias="maxLength", description="The longest prefix length accepted; omitted: exactly prefix."),
    ] = None
    peers: Annotated[
        tuple[AnyAddress, ...], Field(description="Learned from these configured peers only; omitted: every peer.")
    ] = ()

    @model_validator(mode="after")
    def _rules(self, info: ValidationInfo) -> Self:
        problems: list[tuple[Loc, str]] = []
        width = 32 if self.prefix.version == 4 else 128
        if self.max_length is not None and not self.prefix.length <= self.max_length <= width:
            problems.append(
                (("maxLength",), f"must be between {self.prefix.length} and {width}, got {self.max_length}")
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
        tuple[RoutePrefix, ...], Field(description="Subnets never imported (an external network's own subnets).")
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
