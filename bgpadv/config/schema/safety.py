"""`safety`: the limits that keep a wrong or partial view of the cluster off the fabric (minimum prefix lengths,
fail static on mass withdrawals, the hold before withdrawing, max-prefix)."""

from dataclasses import dataclass, field
from typing import Annotated

from pydantic import (
    Field,
)

from bgpadv.config.schema.fields import Between, Span, _Section


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
