"""CAP_NET_ADMIN for the route import: the one capability its netlink writes need, raised in this process only.

Writing a route into a VRF's table (RTM_NEWROUTE, RTM_DELROUTE) needs CAP_NET_ADMIN in the writer's effective set;
reading links, addresses and routes needs nothing. bgpadv runs non-root, and Kubernetes grants a non-root process
no capability of its own (no ambient capabilities), so the image carries a second interpreter for the controller,
`python3-netadmin` beside the virtualenv's `python3`, with the file capability `cap_net_admin+p` (permitted, not
effective: nothing runs with it raised by accident). The controller is started with it
(`bgpadv.core.runfiles.controller_interpreter`)
and raises NET_ADMIN into its effective set when, and only when, it imports routes (`raise_net_admin`).

The file capability takes effect only in a container whose bounding set holds NET_ADMIN
(`securityContext.capabilities.add`) and that allows privilege escalation (no_new_privs ignores file capabilities):
deploy/components/import, or Helm's import values. Everywhere else the interpreter starts with nothing, exactly as
the plain one does, and ExaBGP, the supervisor and the API shim never hold the capability.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os

from bgpadv.core.runfiles import NETADMIN_INTERPRETER

CAP_NET_ADMIN = 12
_LINUX_CAPABILITY_VERSION_3 = 0x20080522


class _Header(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _Data(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def raise_net_admin(log: logging.Logger | None = None) -> str | None:
    """Make CAP_NET_ADMIN effective in this process; None when it is (now or already), else why it cannot be (also
    logged as an error on `log`: every route write will fail, counted in bgpadv_netlink_errors_total)."""
    why = _raise_net_admin()
    if why is not None and log is not None:
        log.error("the route import cannot write the node's routing tables: %s", why)
    return why


def _raise_net_admin() -> str | None:
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    header = _Header(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (_Data * 2)()
    if libc.capget(ctypes.byref(header), data) != 0:
        return f"capget: {os.strerror(ctypes.get_errno())}"
    bit = 1 << CAP_NET_ADMIN
    if data[0].effective & bit:
        return None
    if not data[0].permitted & bit:
        return (
            "NET_ADMIN is not in this process' permitted set: the container needs NET_ADMIN in "
            "securityContext.capabilities.add and allowPrivilegeEscalation: true (kustomize: deploy/components/import; "
            "Helm: importRoutes is enabled in config, or import.enabled), and the image's "
            f"{NETADMIN_INTERPRETER} with the file capability cap_net_admin+p"
        )
    data[0].effective |= bit
    if libc.capset(ctypes.byref(header), data) != 0:
        return f"capset: {os.strerror(ctypes.get_errno())}"
    return None
