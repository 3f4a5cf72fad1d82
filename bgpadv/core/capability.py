"""One Linux capability raised into this process' effective set, from its permitted set, when a feature needs it.

bgpadv runs non-root, and Kubernetes grants a non-root process no capability of its own (no ambient capabilities),
so the image carries a second interpreter for the controller, `python3-netadmin` beside the virtualenv's `python3`,
with the file capabilities `cap_net_admin,cap_net_raw+p` (permitted, not effective: nothing runs with them raised by
accident). The controller is started with it (`bgpadv.core.runfiles.controller_interpreter`) and raises each one
only when a feature it serves needs it: NET_ADMIN for the egress import's route writes
(`bgpadv.importer.capability`), NET_RAW for the raw ICMPv6 socket of the interface peers' Router Solicitations and
Advertisements (`bgpadv.runtime.unnumbered`).

A file capability takes effect only in a container whose bounding set holds it (`securityContext.capabilities.add`)
and that allows privilege escalation (no_new_privs ignores file capabilities): the deploy components and Helm
values name each. Everywhere else the interpreter starts with nothing, exactly as the plain one does, and ExaBGP,
the supervisor and the API shim never hold either capability.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

from bgpadv.core.runfiles import NETADMIN_INTERPRETER

CAP_NET_RAW = 13
CAP_NET_ADMIN = 12
_LINUX_CAPABILITY_VERSION_3 = 0x20080522


class _Header(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _Data(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def raise_capability(number: int, name: str, deploy: str) -> str | None:
    """Make capability `number` (`name`, e.g. "NET_RAW") effective in the calling thread; None when it is (now or
    already), else why it cannot be, naming what the pod needs (`deploy`: the component and Helm value that give
    it). Capabilities are per thread: the threads started afterwards inherit it, one started before does not, and
    the kernel also checks a netlink write against the socket's opener: raise it where the privileged call runs,
    before its socket is opened."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    header = _Header(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (_Data * 2)()
    if libc.capget(ctypes.byref(header), data) != 0:
        return f"capget: {os.strerror(ctypes.get_errno())}"
    word, bit = divmod(number, 32)
    mask = 1 << bit
    if data[word].effective & mask:
        return None
    if not data[word].permitted & mask:
        return (
            f"{name} is not in this process' permitted set: the container needs {name} in "
            f"securityContext.capabilities.add and allowPrivilegeEscalation: true ({deploy}), and the image's "
            f"{NETADMIN_INTERPRETER} with the file capability cap_{name.lower()}+p"
        )
    data[word].effective |= mask
    if libc.capset(ctypes.byref(header), data) != 0:
        return f"capset: {os.strerror(ctypes.get_errno())}"
    return None
