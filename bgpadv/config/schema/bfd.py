"""`peers[].bfd`: a single-hop BFD session to the peer."""

from dataclasses import dataclass
from typing import Annotated

from pydantic import (
    Field,
    StrictBool,
)

from bgpadv.config.schema.fields import Between, _Section

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
