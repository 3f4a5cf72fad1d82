"""The addresses of VMs without an IPAMClaim, where they come from and why one yields no route. Shared by `render`
(its no-route listing) and `explain` (an IP's objects and verdict), beside `outcome`'s claim addresses.

A VM without a claim states its addresses in two places the planner reads (`bgpadv.planner.vms`):

- rule 9, a guest agent's report: the VMI's `status.interfaces[]` entry of an interface attached (Multus) to an
  advertised IPAM-less secondary CUDN, taken only when its `infoSource` names the guest agent;
- rule 10, OVN-K's assignment: the launcher pod's `k8s.ovn.org/pod-networks` entry of an advertised primary CUDN
  (`<namespace>/<cudn>`), for a VM no claim links to that network.

Every other address an interface reports (the pod network's, an interface on a network that is not selected, a
report that is not the guest agent's) is never read. `reported` lists them all; `why_silent` says, for one the plan
neither routes nor refuses, why it is silent, from the same views the planner reads, never deciding a route again.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from bgpadv.config import Config
from bgpadv.core.model import ObjectRef
from bgpadv.core.state import ClusterState
from bgpadv.core.views import GuestInterface, LauncherPod, VmAddress, Vmi
from bgpadv.planner.claims import claim_references
from bgpadv.planner.networks import Networks
from bgpadv.planner.pod_networks import claim_links, claimed_here, primary_networks

POD_NETWORK = "only an IPAMClaim or OVN-K's assignment on the launcher pod is announced there, never the guest's report"
NOT_READ = "the guest's own report is never announced"


@dataclass(frozen=True, slots=True)
class Reported:
    """One address a VMI's interface reports (`interface`) or its launcher pod is assigned (`pod`, `nad`)."""

    vmi: Vmi | None  # None: a launcher pod of a VMI that is gone
    address: VmAddress
    interface: GuestInterface | None = None
    pod: LauncherPod | None = None
    nad: str = ""  # the pod-networks key: `<namespace>/<cudn>`

    @property
    def source(self) -> ObjectRef:
        """The object a route of this address would come from: the VMI (a leftover pod when the VMI is gone)."""
        if self.vmi is not None:
            return self.vmi.ref
        assert self.pod is not None
        return ObjectRef("Pod", self.pod.key[1], self.pod.key[0])

    @property
    def origin(self) -> str:
        """Where the address comes from, for people."""
        if self.interface is not None:
            who = "reported by the guest agent" if self.interface.guest else "not from the guest agent (infoSource)"
            return f"status.interfaces {self.interface.name}, {who}"
        assert self.pod is not None
        return f"launcher pod {self.pod.key[1]}: k8s.ovn.org/pod-networks {self.nad} (OVN-K's assignment)"

    def network(self, vmi: Vmi | None = None) -> str:
        """The CUDN the address is on, as the VMI's spec (an interface) or the pod's annotation (a NAD) names it."""
        if self.pod is not None:
            return self.nad.partition("/")[2]
        vmi = vmi or self.vmi
        if vmi is None or self.interface is None:
            return ""
        return next((a.nad_name for a in vmi.attachments if a.interface == self.interface.name), "")


def never_read(state: ClusterState, item: Reported) -> bool:
    """True when the planner never reads `item`, whatever the VM's state or the configuration's selection: a report
    of the pod network, of an interface on a network that is no IPAM-less secondary CUDN, or not the guest agent's.
    Such an address has no say in its VM's verdict (its real address is a claim's or the pod's)."""
    if item.interface is None:
        return False
    view = state.cudns.get(item.network())
    return view is None or not view.secondary or not item.interface.guest


def _vmi_of(state: ClusterState, pod: LauncherPod, by_uid: dict[str, Vmi]) -> Vmi | None:
    """The VMI a launcher pod names (a lookup hint only) or, failing that, the one whose uid it states."""
    namespace = pod.key[0]
    for name in pod.names:
        vmi = state.vmis.get((namespace, name))
        if vmi is not None:
            return vmi
    return next((by_uid[u] for u in (pod.created_by, pod.owner_uid) if u and u in by_uid), None)


def reported(state: ClusterState) -> Iterator[Reported]:
    """Every address a launcher pod is assigned on a primary network, then every address a VMI's interfaces report
    (the pod's first: of one address stated in both, OVN-K's assignment is the one the planner may read)."""
    by_uid = {v.uid: v for v in state.vmis.values() if v.uid}
    for pod in state.pods.values():
        if not pod.networks:
            continue
        vmi = _vmi_of(state, pod, by_uid)
        for nad, entry in pod.networks.items():
            for address in entry.addresses:
                yield Reported(vmi, address, pod=pod, nad=nad)
    for vmi in state.vmis.values():
        for iface in vmi.interfaces:
            for address in iface.addresses or ():
                yield Reported(vmi, address, interface=iface)


def vm_state(vmi: Vmi | None, node: str | None) -> str | None:
    """Why a VM's addresses are silent whatever their network (the operator's first question), or None: running
    (on `node`, per-node mode)."""
    if vmi is None:
        return "VM stopped: no VirtualMachineInstance"
    if vmi.deleting:
        return "VM stopping: its VirtualMachineInstance is being deleted"
    if vmi.phase in ("Succeeded", "Failed"):
        return f"VM stopped: its VirtualMachineInstance is {vmi.phase}"
    if vmi.phase != "Running":
        return f"VM pending: its VirtualMachineInstance is {vmi.phase or 'without a phase'}, not Running yet"
    if node is not None and vmi.node_name != node:
        return f"runs on node {vmi.node_name or '?'}: that node's instance announces it"
    return None


def network_silence(state: ClusterState, networks: Networks, name: str) -> str | None:
    """What keeps the existing CUDN `name` from carrying VM addresses, as "CUDN <name> is <this>" reads (with the
    reason code the planner gives its claims), or None: advertised (or no such CUDN: see `why_silent`)."""
    view = state.cudns.get(name)
    if view is None or name in networks.advertised:
        return None
    if view.withdrawn or name in networks.withdrawn:
        return "being deleted or not created by OVN-K: its routes are withdrawn"
    reason = networks.claim_refusals.get(name)
    if reason is not None:
        return f"not advertised: {reason[0]} ({reason[1]})"
    return "not advertised"


def why_silent(state: ClusterState, config: Config, networks: Networks, item: Reported, node: str | None) -> str:
    """Why the planner reads `item` into no route and no refusal (see the module); `node`: the instance's node in
    per-node mode (None: every instance was asked)."""
    if not config.networks.host_routes:
        return "hostRoutes is off: no VM host routes are announced"
    vmi = item.vmi
    stopped = vm_state(vmi, node)
    if stopped is not None:
        return stopped
    assert vmi is not None
    if item.interface is not None:
        return _interface_silence(state, networks, item, item.interface)
    return _pod_silence(state, config, networks, item, vmi)


def _interface_silence(state: ClusterState, networks: Networks, item: Reported, interface: GuestInterface) -> str:
    """Why a running VM's interface report is never read (rule 9's conditions, one by one)."""
    iface, name = interface.name, item.network()
    if not name:
        return f"interface {iface} is the pod network's (no Multus attachment): {POD_NETWORK}"
    if name not in state.cudns:
        return f"interface {iface} is on NAD {name}, which no ClusterUserDefinedNetwork generates: not advertised"
    silent = network_silence(state, networks, name)
    if silent is not None:
        return f"interface {iface} is on CUDN {name}, {silent}"
    if not networks.advertised[name].guest_reports:
        return f"interface {iface} is on CUDN {name}, which assigns its addresses (IPAM): {NOT_READ}"
    if not interface.guest:
        return "only the guest agent's reports are read (infoSource names no guest-agent)"
    return "not announced, and no rule says why (please report this)"


def _pod_silence(state: ClusterState, config: Config, networks: Networks, item: Reported, vmi: Vmi) -> str:
    """Why a running VM's launcher pod assignment is not read (rule 10's conditions, one by one)."""
    pod, name = item.pod, item.network()
    assert pod is not None
    if not config.networks.pod_network_addresses:
        return "networks.podNetworkAddresses is off: OVN-K's assignment on the launcher pod is not read"
    if not pod.runs(vmi.uid):
        return f"launcher pod {pod.key[1]} names the VMI but KubeVirt does not bind it to it (uids): never read"
    if pod.finished:
        return f"launcher pod {pod.key[1]} has finished: the VMI's running pod is read"
    if name not in state.cudns:
        return f"no ClusterUserDefinedNetwork {name}: not advertised"
    silent = network_silence(state, networks, name)
    if silent is not None:
        return f"CUDN {name} is {silent}"
    if item.nad.partition("/")[0] != vmi.key[0]:
        return f"the entry {item.nad} names another namespace than the VMI's: not its network"
    primary = primary_networks(networks)
    if claimed_here(
        vmi.key[0],
        vmi.key[1],
        primary,
        claim_links(state.ipam_claims.values(), claim_references(state.pods.values(), state.vmis)),
    ):
        return f"an IPAMClaim of the VM names CUDN {name}: the claim's addresses are announced, not the pod's"
    return "another launcher pod of the VMI (the one on its node) is read"
