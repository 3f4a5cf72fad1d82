"""CAP_NET_ADMIN for the route import: the one capability its netlink writes need, raised in this process only.

Writing a route into a VRF's table (RTM_NEWROUTE, RTM_DELROUTE) needs CAP_NET_ADMIN in the writer's effective set;
reading links, addresses and routes needs nothing. The controller raises it from the permitted set its interpreter's
file capability gives (`bgpadv.core.capability`) when, and only when, it imports routes (`raise_net_admin`): in a
container with NET_ADMIN in its bounding set and privilege escalation allowed (deploy/components/import, or Helm's
import values).
"""

from __future__ import annotations

import logging

from bgpadv.core.capability import CAP_NET_ADMIN, raise_capability

__all__ = ["CAP_NET_ADMIN", "raise_net_admin"]


def raise_net_admin(log: logging.Logger | None = None) -> str | None:
    """Make CAP_NET_ADMIN effective in this process; None when it is (now or already), else why it cannot be (also
    logged as an error on `log`: every route write will fail, counted in bgpadv_netlink_errors_total)."""
    why = raise_capability(
        CAP_NET_ADMIN,
        "NET_ADMIN",
        "kustomize: deploy/components/import; Helm: importRoutes is enabled in config, or import.enabled",
    )
    if why is not None and log is not None:
        log.error("the route import cannot write the node's routing tables: %s", why)
    return why
