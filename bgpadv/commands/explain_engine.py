"""The answer of `bgpadv explain`: for what was asked (`explain_query.Query`), the objects that mention it, each
verdict of the plan on it and the routes that result, with the verdict of the whole (see `bgpadv.commands.explain`).

Built on what `render` prints, never a second rule engine: the plan of the pure planner through the last guard, per
instance and per peer (`bgpadv.commands.outcome`). A refusal's reason code is explained from the docstrings of
`bgpadv.core.reasons` (`meaning`), so a code added there is explained without a change here. Nothing here prints or
reads: `explain_render` prints an `Explanation`, `explain` reads the cluster and the live instances.
"""

from __future__ import annotations

import ast
import functools
import inspect
import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bgpadv.commands.explain_objects import (
    describe_claim,
    describe_network,
    describe_node,
    describe_pod,
    describe_vmi,
    object_ref,
)
from bgpadv.commands.explain_query import Query
from bgpadv.commands.outcome import (
    Instance,
    claim_addresses,
    claim_vm,
    silent_reason,
    unique_refusals,
    unrouted,
)
from bgpadv.commands.reported import Reported, never_read, reported, why_silent
from bgpadv.config import Config
from bgpadv.core import reasons
from bgpadv.core.model import ObjectRef, Refusal, Route
from bgpadv.core.prefix import Address, Prefix
from bgpadv.core.state import ClusterState
from bgpadv.core.views import Claim, LauncherPod, VmAddress, Vmi
from bgpadv.planner.claims import claim_references, claim_vms
from bgpadv.planner.networks import CUDN_PREFIX, index_networks

ANNOUNCED = "announced"
REFUSED = "refused"
NOT_ANNOUNCED = "not announced"
COVERED = "covered"
UNKNOWN = "unknown"
VERDICTS = (ANNOUNCED, REFUSED, NOT_ANNOUNCED, COVERED, UNKNOWN)
"""The verdicts, best first: a VM or network takes the worst of its addresses'."""

EXIT_ANNOUNCED = 0
EXIT_NOT_ANNOUNCED = 1
MAX_SENT_PREFIXES = 256  # per instance and query (the listener's own limit, bgpadv.observe.health.MAX_SENT_QUERY)


@functools.cache
def reason_meanings() -> dict[str, str]:
    """Reason code → its docstring in `bgpadv.core.reasons` (whitespace folded), for every code defined there."""
    tree = ast.parse(inspect.getsource(reasons))
    out: dict[str, str] = {}
    body = tree.body
    for node, after in itertools.pairwise(body):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            out[node.value.value] = " ".join(after.value.value.split())
    return out


def meaning(code: str) -> str:
    """What a reason code means (its docstring), or "" for a code `bgpadv.core.reasons` does not document."""
    return reason_meanings().get(code, "")


# -- the explanation -------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Mention:
    """An object that mentions what was asked, and what it says of it."""

    ref: ObjectRef
    says: str


@dataclass(frozen=True, slots=True)
class Verdict:
    """One rule's verdict on one value: `admitted`, `refused` or `skipped`; by the planner or the guard."""

    verdict: str
    source: ObjectRef
    value: str
    reason: str = ""
    message: str = ""
    network: str = ""
    stage: str = "planner"

    @property
    def meaning(self) -> str:
        return meaning(self.reason) if self.reason else ""


@dataclass(frozen=True, slots=True)
class Announced:
    """A route of the plan with where it goes: the instance announcing it and the peers that get it (an unnumbered
    peer scoped to its interface, `fe80::1%eth1`)."""

    route: Route
    instance: str
    peers: tuple[str, ...]


@dataclass(slots=True)
class Explanation:
    query: Query
    verdict: str = UNKNOWN
    summary: str = ""
    objects: list[Mention] = field(default_factory=list)
    rules: list[Verdict] = field(default_factory=list)
    routes: list[Announced] = field(default_factory=list)
    covering: list[Announced] = field(default_factory=list)
    per_node: bool = False
    instances: list[dict[str, Any]] = field(default_factory=list)  # live: what each instance reports

    @property
    def exit_code(self) -> int:
        return EXIT_ANNOUNCED if self.verdict == ANNOUNCED else EXIT_NOT_ANNOUNCED

    def prefixes(self) -> list[str]:
        """The prefixes whose sends the live instances are asked about: the routes, the subnets holding the address,
        and what was asked (a host prefix that has no route now may have been withdrawn)."""
        found = [str(a.route.prefix) for a in (*self.routes, *self.covering)]
        if self.query.prefix is not None:
            found.append(str(self.query.prefix))
        return list(dict.fromkeys(found))[:MAX_SENT_PREFIXES]

    def networks(self) -> list[str]:
        """The networks concerned (for the live instances' route counts)."""
        names = {a.route.network for a in (*self.routes, *self.covering)} | {v.network for v in self.rules}
        return sorted(n for n in names if n)


def _worst(verdicts: Iterable[str]) -> str:
    found = list(verdicts)
    return max(found, key=VERDICTS.index) if found else UNKNOWN


# -- building it ---------------------------------------------------------------------------------------------------


class Explainer:
    """Explains queries against one cluster state, its configuration and the instances' outcomes."""

    def __init__(self, state: ClusterState, config: Config, found: Sequence[Instance]):
        self.state = state
        self.config = config
        self.found = tuple(found)
        self.refusals = unique_refusals(self.found)
        self.by_guard = frozenset(k for i in self.found for k in i.by_guard)
        self.announced = [Announced(r, i.name, i.peer_labels_of(r)) for i in self.found for r in i.plan.routes]
        self.networks = index_networks(state, config)
        self.per_node = config.node_name is not None
        self.references = claim_references(state.pods.values(), state.vmis)

    # network status as the planner's own index says it
    def network_status(self, name: str) -> str:
        view = self.state.cudns.get(name)
        if view is None:
            return "does not exist"
        if view.withdrawn:
            return "being deleted or not created by OVN-K: withdrawn"
        if name in self.networks.advertised:
            return "selected and advertised"
        refused = self.networks.claim_refusals.get(name)
        if refused is not None:
            return f"not advertised: {refused[0]} ({refused[1]})"
        return "not advertised"

    def explain(self, query: Query) -> Explanation:
        out = Explanation(query, per_node=self.per_node)
        if query.kind == "address":
            self._address(query, out)
        elif query.kind == "prefix":
            self._prefix(query, out)
        elif query.kind == "vm":
            self._vm(query, out)
        else:
            self._network(query, out)
        return out

    # -- pieces ----------------------------------------------------------------------------------------------------
    def _routes_for(self, prefix: Prefix) -> list[Announced]:
        return [a for a in self.announced if a.route.prefix == prefix]

    def _covering(self, address: Address) -> list[Announced]:
        return [a for a in self.announced if not a.route.prefix.is_host and address in a.route.prefix]

    def _admitted(self, announced: Iterable[Announced], out: Explanation) -> None:
        seen: set[tuple[object, ...]] = set()
        for a in announced:
            r = a.route
            key = (r.source, r.prefix, r.next_hop)
            if key in seen:
                continue
            seen.add(key)
            hop = "self" if r.next_hop is None else str(r.next_hop)
            where = f" (node {r.node})" if r.node else ""
            out.rules.append(
                Verdict("admitted", r.source, str(r.prefix), "", f"{r.kind} route, next hop {hop}{where}", r.network)
            )
            peers = sorted(
                {p for b in announced if b.route.source == r.source and b.route.prefix == r.prefix for p in b.peers}
            )
            out.rules.append(
                Verdict(
                    "admitted", r.source, str(r.prefix), "", f"sent to peer(s) {', '.join(peers)}", r.network, "guard"
                )
            )

    def _refused(self, refusals: Iterable[Refusal], out: Explanation) -> None:
        for r in refusals:
            stage = "guard" if (r.source, r.value, r.reason) in self.by_guard else "planner"
            out.rules.append(Verdict(REFUSED, r.source, r.value, r.reason, r.message, r.network, stage))

    def _claims_with(self, address: Address) -> list[Claim]:
        return [c for c in self.state.ipam_claims.values() if any(a.address == address for a in c.ips)]

    def _pods_of(self, vmi: Vmi) -> list[tuple[tuple[str, str], LauncherPod]]:
        """The launcher pods bound to the VMI by its uid, and those that merely name it (listed, never trusted)."""
        return [
            (k, p)
            for k, p in sorted(self.state.pods.items())
            if k[0] == vmi.key[0] and (p.runs(vmi.uid) or vmi.key[1] in p.names)
        ]

    def _mention_vm(self, vmi: Vmi | None, key: tuple[str, str], out: Explanation, address: Address | None) -> None:
        if vmi is None:
            out.objects.append(
                Mention(object_ref("VirtualMachineInstance", key), "absent: the VM is stopped (or never ran)")
            )
            return
        out.objects.append(Mention(vmi.ref, describe_vmi(vmi, address)))
        for pod_key, pod in self._pods_of(vmi):
            says = describe_pod(pod, vmi.uid)
            if pod.claim_ref and pod.runs(vmi.uid):
                says += "; " + self._claim_reference(vmi, pod.claim_ref)
            out.objects.append(Mention(object_ref("Pod", pod_key), says))
        for node in sorted({n for n in self._vm_nodes(vmi) if n}):
            view = self.state.nodes.get(node)
            if view is not None:
                out.objects.append(Mention(view.ref, describe_node(view)))
            else:
                out.objects.append(Mention(ObjectRef("Node", node), "absent: no such node"))

    def _claim_reference(self, vmi: Vmi, name: str) -> str:
        """What the pod's claim reference (the claim OVN-K allocates its address from) means for the VM: the claim
        bgpadv reads for it, and where the claim's own label or owner, or another VM's pod, disagrees."""
        claim = self.state.ipam_claims.get((vmi.key[0], name))
        said = f"OVN-K allocates its address from IPAMClaim {name}"
        if claim is None:
            return f"{said}, which does not exist"
        vms = self.references.of(claim)[0]
        if len(vms) > 1:
            return f"{said}, which the launcher pods of VMs {', '.join(vms)} all reference: announced for none"
        if claim.vm is None or claim.vm == vmi.key[1] or vmi.key[1] not in vms:
            return said
        return f"{said}, whose label or owner names VM {claim.vm}: the reference wins, it is this VM's claim"

    @staticmethod
    def _vm_nodes(vmi: Vmi) -> list[str | None]:
        m = vmi.migration
        return [vmi.node_name, *((m.source_node, m.target_node) if m is not None else ())]

    def _mention_network(self, name: str, out: Explanation) -> None:
        view = self.state.cudns.get(name)
        if view is None:
            out.objects.append(Mention(ObjectRef("ClusterUserDefinedNetwork", name), "absent: no such CUDN"))
        else:
            out.objects.append(Mention(view.ref, describe_network(view, self.network_status(name))))

    def _claim_network(self, claim: Claim) -> str | None:
        net = claim.network or ""
        return net[len(CUDN_PREFIX) :] if net.startswith(CUDN_PREFIX) else None

    def _explain_address_of(
        self,
        address: VmAddress,
        source: ObjectRef,
        claim: Claim | None,
        vmi: Vmi | None,
        out: Explanation,
        item: Reported | None = None,
    ) -> str:
        """The verdict of one address of one object: its routes, its refusals, or its silent skip. `item`: the
        address is a VMI's own (no claim): its report or assignment, which says where it came from."""
        a = address.address
        network = (self._claim_network(claim) or "") if claim is not None else item.network() if item else ""
        routes = [x for x in self._routes_for(a.prefix()) if x.route.source == source] if a is not None else []
        refusals = [
            r
            for r in self.refusals
            if r.source == source
            and _speaks_of(r, address)
            and (not network or not r.network or r.network == network or _is_prefix_value(r.value))
        ]
        self._admitted(routes, out)
        self._refused(refusals, out)
        out.routes.extend(x for x in routes if x not in out.routes)
        if refusals:
            return REFUSED
        if routes:
            return ANNOUNCED
        if item is not None:  # every instance was asked (node None)
            why = f"{item.origin}: {why_silent(self.state, self.config, self.networks, item, None)}"
        else:
            why = silent_reason(self.state, self.config, claim, vmi, None)
        out.rules.append(Verdict("skipped", source, address.text, "", why, network))
        return NOT_ANNOUNCED

    def _reported(self, vmi: Vmi | None = None, address: Address | None = None) -> list[Reported]:
        """The VMI addresses (`reported`) of `vmi` and/or equal to `address`, each (source, address) once."""
        seen: set[tuple[ObjectRef, str]] = set()
        out: list[Reported] = []
        for item in reported(self.state):
            if vmi is not None and (item.vmi is None or item.vmi.ref != vmi.ref):
                continue
            if address is not None and item.address.address != address:
                continue
            if (item.source, item.address.text) not in seen:
                seen.add((item.source, item.address.text))
                out.append(item)
        return out

    # -- an address ------------------------------------------------------------------------------------------------
    def _address_reported(self, address: Address, out: Explanation, networks: set[str]) -> list[str]:
        """The verdicts of `address` as VMIs without a claim state it (`reported`); `networks` gains theirs."""
        explained = {m.ref for m in out.objects if m.ref.kind == "VirtualMachineInstance"}  # by their claims
        verdicts = []
        for item in self._reported(address=address):
            if item.vmi is not None and item.vmi.ref in explained:
                continue  # the VM's claim holds the address: the claim's verdict is the address's
            if item.vmi is not None and not any(m.ref == item.vmi.ref for m in out.objects):
                self._mention_vm(item.vmi, item.vmi.key, out, address)
            elif item.vmi is None and item.pod is not None:
                says = describe_pod(item.pod) + "; its VirtualMachineInstance is gone"
                out.objects.append(Mention(item.source, says))
            if item.network():
                networks.add(item.network())
            verdicts.append(self._explain_address_of(item.address, item.source, None, item.vmi, out, item))
        return verdicts

    def _address_claims(self, address: Address, out: Explanation, networks: set[str]) -> list[str]:
        """The verdicts of `address` as the claims listing it state it, with their VMs; `networks` gains theirs."""
        verdicts = []
        for claim in self._claims_with(address):
            out.objects.append(Mention(claim.ref, describe_claim(claim, self.references.of(claim))))
            vm = claim_vm(claim, self.references) or claim.vm
            vmi = self.state.vmis.get((claim.key[0], vm)) if vm else None
            if vm:
                self._mention_vm(vmi, (claim.key[0], vm), out, address)
            net = self._claim_network(claim)
            if net:
                networks.add(net)
            vm_address = next(x for x in claim.ips if x.address == address)
            verdicts.append(self._explain_address_of(vm_address, claim.ref, claim, vmi, out))
        return verdicts

    def _address_nodes(self, address: Address, out: Explanation) -> None:
        """The nodes `address` is an address of or lies in a host subnet of, with their refusals of it."""
        for _name, node in sorted(self.state.nodes.items()):
            subnets = [s for subs in node.host_subnets.values() for s in subs if s.prefix and address in s.prefix]
            if address in node.addresses or subnets:
                out.objects.append(Mention(node.ref, describe_node(node, address)))
                # the node's own refusals of the address (an older node reported it first)
                text = str(address)
                self._refused([r for r in self.refusals if r.source == node.ref and text in r.value.split(", ")], out)

    def _address(self, query: Query, out: Explanation) -> None:
        address = query.address
        assert address is not None and query.prefix is not None
        networks: set[str] = set()
        verdicts = self._address_claims(address, out, networks)
        verdicts += self._address_reported(address, out, networks)
        for name, view in sorted(self.state.cudns.items()):
            if any(address in s for s in view.subnets) or name in networks:
                self._mention_network(name, out)
        self._address_nodes(address, out)
        # the guard's refusals of the host route itself (a prefix, whatever object it came from)
        for r in self.refusals:
            if r.value.strip() == str(query.prefix) and not any(
                v.source == r.source and v.value == r.value for v in out.rules
            ):
                self._refused([r], out)
                verdicts.append(REFUSED)
        own = [a for a in self._routes_for(query.prefix) if a not in out.routes]
        if own:  # a route for the address from an object not met above
            self._admitted(own, out)
            out.routes.extend(own)
        out.covering = self._covering(address)
        if not verdicts:
            verdicts.append(COVERED if out.covering else UNKNOWN)
        # the address is announced when its host route is, whoever else claims it (a younger claimant's refusal is
        # listed, and its VM is explained by `explain NAMESPACE/VM`)
        out.verdict = ANNOUNCED if out.routes else _worst(verdicts)
        out.summary = _address_summary(out, query)

    # -- a prefix --------------------------------------------------------------------------------------------------
    def _prefix(self, query: Query, out: Explanation) -> None:
        prefix = query.prefix
        assert prefix is not None
        own = self._routes_for(prefix)
        self._admitted(own, out)
        out.routes.extend(own)
        refused = [r for r in self.refusals if _same_prefix(r.value, prefix)]
        self._refused(refused, out)
        for name, view in sorted(self.state.cudns.items()):
            if any(s.overlaps(prefix) for s in view.subnets):
                self._mention_network(name, out)
        for node in self.state.nodes.values():
            if any(s.prefix == prefix for subs in node.host_subnets.values() for s in subs):
                out.objects.append(Mention(node.ref, describe_node(node)))
        out.verdict = ANNOUNCED if own else REFUSED if refused else UNKNOWN
        out.summary = {
            REFUSED: f"{prefix} is refused",
            ANNOUNCED: f"{prefix} is announced",
            UNKNOWN: f"no object gives a route for {prefix}",
        }[out.verdict]

    # -- a VM ------------------------------------------------------------------------------------------------------
    def _vm(self, query: Query, out: Explanation) -> None:
        assert query.vm is not None
        namespace, name = query.vm
        vmi = self.state.vmis.get((namespace, name))
        refs = self.references
        claims = [
            c
            for c in self.state.ipam_claims.values()
            if c.key[0] == namespace and (c.vm == name or name in claim_vms(c, refs.of(c)))
        ]
        if vmi is None and not claims:
            out.verdict, out.summary = UNKNOWN, f"no VirtualMachineInstance or IPAMClaim names VM {namespace}/{name}"
            return
        verdicts: list[str] = []
        self._mention_vm(vmi, (namespace, name), out, None)
        for claim in sorted(claims, key=lambda c: c.key):
            verdicts += self._vm_claim(claim, name, vmi, out)
        if vmi is not None:
            verdicts += self._vm_own(vmi, claims, out)
        out.verdict = _worst(verdicts) if verdicts else NOT_ANNOUNCED
        if not verdicts:
            out.rules.append(
                Verdict(
                    "skipped",
                    vmi.ref if vmi else ObjectRef("VirtualMachineInstance", name, namespace),
                    "-",
                    "",
                    "no IPAMClaim and no guest-reported address on an advertised network",
                )
            )
        out.summary = _vm_summary(out, namespace, name)

    def _vm_own(self, vmi: Vmi, claims: Sequence[Claim], out: Explanation) -> list[str]:
        """The verdicts of the VM's own addresses (a guest's report, OVN-K's assignment on its launcher pod), of the
        VMI's refusals of no one address, and of its routes not listed yet."""
        verdicts = []
        claimed = {a.key for c in claims for a in c.ips if a.address is not None}
        for item in self._reported(vmi=vmi):
            if item.address.address is not None and item.address.key in claimed:
                continue  # the claim's
            net = item.network()
            if net and not any((m.ref.kind, m.ref.name) == ("ClusterUserDefinedNetwork", net) for m in out.objects):
                self._mention_network(net, out)
            verdict = self._explain_address_of(item.address, vmi.ref, None, vmi, out, item)
            if verdict != NOT_ANNOUNCED or not never_read(self.state, item):
                verdicts.append(verdict)  # a report never read is listed, not the VM's verdict
        listed = {(v.source, v.value, v.reason) for v in out.rules}
        for r in self.refusals:  # the VMI's refusals of no one address (a namespace, a list), not listed yet
            if r.source == vmi.ref and (r.source, r.value, r.reason) not in listed:
                self._refused([r], out)
                verdicts.append(REFUSED)
        own = [a for a in self.announced if a.route.source == vmi.ref and a not in out.routes]
        if own:
            self._admitted(own, out)
            out.routes.extend(own)
            verdicts.append(ANNOUNCED)
        return verdicts

    def _vm_claim(self, claim: Claim, name: str, vmi: Vmi | None, out: Explanation) -> list[str]:
        """The verdicts of one claim of VM `name` (by its label or owner, or by its launcher pod's reference)."""
        out.objects.append(Mention(claim.ref, describe_claim(claim, self.references.of(claim))))
        net = self._claim_network(claim)
        if net:
            self._mention_network(net, out)
        object_refusals = [r for r in self.refusals if r.source == claim.ref and not _address_value(r.value)]
        if claim_vm(claim, self.references) == name:  # this VM's by its pod's reference: the label's refusal, shown
            kept = [r for r in object_refusals if r.reason in reasons.ADDRESSES_KEPT_REASONS]
            self._refused(kept, out)
            object_refusals = [r for r in object_refusals if r not in kept]
        if object_refusals:
            self._refused(object_refusals, out)
            return [REFUSED]
        return [self._explain_address_of(address, claim.ref, claim, vmi, out) for address in claim_addresses(claim)]

    # -- a network -------------------------------------------------------------------------------------------------
    def _network(self, query: Query, out: Explanation) -> None:
        name = query.network or ""
        view = self.state.cudns.get(name)
        claims = [c for c in self.state.ipam_claims.values() if self._claim_network(c) == name]
        if view is None and not claims:
            out.verdict, out.summary = UNKNOWN, f"no ClusterUserDefinedNetwork {name}"
            return
        self._mention_network(name, out)
        for node in sorted(self.state.nodes.values(), key=lambda n: n.name):
            if node.host_subnets.get(name):
                out.objects.append(
                    Mention(
                        node.ref,
                        describe_node(node) + "; host subnet " + ", ".join(s.text for s in node.host_subnets[name]),
                    )
                )
        for claim in sorted(claims, key=lambda c: c.key):
            out.objects.append(Mention(claim.ref, describe_claim(claim, self.references.of(claim))))
        own = [a for a in self.announced if a.route.network == name]
        subnets = [a for a in own if a.route.kind == "subnet"]
        out.routes.extend(own)  # the routes table says what was admitted, one line per route
        refused = [r for r in self.refusals if r.network == name]
        self._refused(refused, out)
        for item in unrouted(self.state, self.config, self.found):
            if item.network == name:
                out.rules.append(Verdict("skipped", item.source, item.value, "", item.why, name))
        status = self.network_status(name)
        if own:
            out.verdict = ANNOUNCED
        elif view is not None and view.ref in {r.source for r in refused}:
            out.verdict = REFUSED
        else:
            out.verdict = NOT_ANNOUNCED
        hosts = len(own) - len(subnets)
        out.summary = (
            f"network {name} is {status}: {len(subnets)} subnet route(s), {hosts} host route(s) announced, "
            f"{len(refused)} refusal(s)"
        )


def _address_value(value: str) -> bool:
    """True when a refusal's value is an address or prefix (one address's refusal), not the object's."""
    return _is_prefix_value(value)


def _is_prefix_value(value: str) -> bool:
    try:
        Prefix.parse(value.strip(), strict=False)
    except ValueError:
        return False
    return True


def _same_prefix(value: str, prefix: Prefix) -> bool:
    """True when a refusal's value is exactly `prefix` (a subnet as written, or a guard's prefix)."""
    try:
        return Prefix.parse(value.strip()) == prefix
    except ValueError:
        return False


def _speaks_of(refusal: Refusal, address: VmAddress) -> bool:
    """A refusal of `address` (by its text, or its host route's prefix: the guard's), or of its whole object (not one
    that leaves the addresses announced, `reasons.ADDRESSES_KEPT_REASONS`)."""
    if refusal.reason in reasons.ADDRESSES_KEPT_REASONS:
        return False
    if refusal.value == address.text:
        return True
    try:
        prefix = Prefix.parse(refusal.value.strip(), strict=False)
    except ValueError:
        return True  # the object's refusal (its network, its VM link, its status): it speaks of every address
    a = address.address
    return a is not None and (prefix == a.prefix() or (refusal.value.split("/")[0] == str(a)))


def _address_summary(out: Explanation, query: Query) -> str:
    if out.verdict == ANNOUNCED:
        hops = sorted({"self" if a.route.next_hop is None else str(a.route.next_hop) for a in out.routes})
        return f"{query.text} is announced as {query.prefix}, next hop {', '.join(hops)}"
    if out.verdict == REFUSED:
        codes = sorted({v.reason for v in out.rules if v.verdict == REFUSED})
        return f"{query.text} is refused: {', '.join(codes)}"
    if out.verdict == NOT_ANNOUNCED:
        whys = sorted({v.message for v in out.rules if v.verdict == "skipped"})
        return f"{query.text} is not announced: {'; '.join(whys)}"
    if out.verdict == COVERED:
        held_by = ", ".join(sorted({str(a.route.prefix) for a in out.covering}))
        return f"{query.text} has no route of its own; it lies in announced {held_by}"
    return f"no object mentions {query.text}, and no announced route holds it"


def _vm_summary(out: Explanation, namespace: str, name: str) -> str:
    routes = sorted({str(a.route.prefix) for a in out.routes})
    if out.verdict == ANNOUNCED:
        return f"VM {namespace}/{name} is announced: {', '.join(routes)}"
    if out.verdict == REFUSED:
        codes = sorted({v.reason for v in out.rules if v.verdict == REFUSED})
        also = f" (announced: {', '.join(routes)})" if routes else ""
        return f"VM {namespace}/{name} is refused: {', '.join(codes)}{also}"
    whys = sorted({v.message for v in out.rules if v.verdict == "skipped"})
    return f"VM {namespace}/{name} is not announced: {'; '.join(whys)}"
