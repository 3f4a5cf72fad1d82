"""UPDATE messages as ExaBGP itself packs them, for the tests of what bgpadv reads of ExaBGP's echo.

`Packer` parses an ExaBGP neighbor configuration (IPv4 and IPv6 unicast, the `api` block bgpadv renders), negotiates
a session with itself the way ExaBGP's `validate` does, and packs the routes of an ExaBGP API command into the
messages ExaBGP would send on it (`Update.messages`, as `Protocol.new_update` does). Needs the `exabgp` package.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

NEIGHBOR_CONFIG = """process bgpadv {{
    run /bin/true;
    encoder json;
}}
neighbor 10.0.0.1 {{
    router-id 10.0.0.11;
    local-address 10.0.0.11;
    local-as 64512;
    peer-as 64513;
    family {{
        ipv4 unicast;
        ipv6 unicast;
    }}
    {add_path}
    api {{
        processes [ bgpadv ];
        neighbor-changes;
        send {{ {send} }}
        receive {{ notification; }}
    }}
}}
"""


class Packer:
    """One configured neighbor and a session negotiated with it; `pack(command)` gives the messages' bytes."""

    def __init__(self, send: str = "parsed; update; notification;", add_path: bool = False) -> None:
        from exabgp.configuration.check import _negotiated
        from exabgp.configuration.configuration import Configuration
        from exabgp.environment import getenv
        from exabgp.logger import option
        from exabgp.reactor.api import API

        option.setup(getenv())
        text = NEIGHBOR_CONFIG.format(send=send, add_path="capability { add-path send/receive; }" if add_path else "")
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "exabgp.conf"
            path.write_text(text)
            configuration = Configuration([str(path)])
            if not configuration.reload():
                raise RuntimeError(f"ExaBGP refused the test configuration: {configuration.error}")
        [self.neighbor] = configuration.neighbors.values()
        self.negotiated = _negotiated(self.neighbor)
        self._api = API(Configuration([]))

    def pack(self, command: str) -> list[bytes]:
        """`announce attributes ... nlri ...` or `withdraw attributes nlri ...` (one family) as ExaBGP packs it."""
        from exabgp.bgp.message import Action, Update

        changes = self._api.api_attributes(command, [])
        if not changes:
            raise ValueError(f"ExaBGP refused the command: {command}")
        action = Action.WITHDRAW if command.startswith("withdraw") else Action.ANNOUNCE
        for change in changes:
            change.nlri.action = action
        update = Update([c.nlri for c in changes], changes[0].attributes)
        return list(update.messages(self.negotiated, action == Action.WITHDRAW))

    def end_of_rib(self, version: int) -> bytes:
        from exabgp.bgp.message.update.eor import EOR
        from exabgp.protocol.family import AFI, SAFI

        return EOR(AFI.ipv4 if version == 4 else AFI.ipv6, SAFI.unicast).message(self.negotiated)

    def encoder(self) -> Any:
        """ExaBGP's JSON encoder, as its API processes get it."""
        from exabgp.reactor.api.response import Response
        from exabgp.version import json as json_version

        return Response.JSON(json_version)
