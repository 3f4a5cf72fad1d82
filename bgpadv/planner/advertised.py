"""An advertised network as the planner checks addresses against it: `Network`, one selected, valid CUDN with its
ranges as integers, and how its `namespaceSelector` judges a namespace bgpadv has not listed.

`networks` makes them (selection, validation, overlaps); the address readers (`claims`, `guest_reports`,
`pod_networks`), the candidates, the attribute policies and the host subnets read them. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from bgpadv.core import views
from bgpadv.core.model import ObjectRef
from bgpadv.core.selectors import LabelSelector
from bgpadv.planner import checks
from bgpadv.planner.checks import Address, SubnetRange

__all__ = ["NAME_LABEL", "Network", "selects_unlisted"]


@dataclass(frozen=True, slots=True)
class Network:
    """One advertised CUDN, with its ranges as integers for the address checks."""

    name: str
    ref: ObjectRef
    topology: str  # "Layer2" | "Layer3"
    subnets: tuple[SubnetRange, ...]
    gateways: frozenset[Address] = frozenset()
    infrastructure: tuple[SubnetRange, ...] = ()
    infrastructure_addresses: frozenset[Address] = frozenset()  # implied management-port addresses
    ipam_disabled: bool = False
    persistent_ips: bool = False  # `ipam.lifecycle: Persistent`: its VMs' addresses come from IPAMClaims
    host_subnet_lengths: tuple[tuple[SubnetRange, int], ...] = ()  # Layer3: (cidr, hostSubnet) when set
    # the namespaces its namespaceSelector selects among those listed (real labels), and those it does not select:
    namespaces: frozenset[str] = frozenset()
    unselected: frozenset[str] = frozenset()
    namespace_selector: LabelSelector | None = None  # for namespaces not listed (see `selects_namespace`)
    # IPAM-less secondary Layer2 networks (guest-reported addresses, see `vms`):
    guest_reports: bool = False
    # the nodes its default-VRF RouteAdvertisements select (`nodeSelector`); None: every node
    node_selectors: tuple[LabelSelector, ...] | None = None
    allowed: tuple[SubnetRange, ...] = ()  # networks.secondary[].allowedPrefixes, beside a CUDN subnet
    max_addresses: int = 0  # networks.secondary[].maxAddressesPerInterface
    announce_subnets: bool = True  # False: `subnets` are the configured allowed prefixes (no CUDN subnet)
    labels: Mapping[str, str] = field(default_factory=lambda: views.EMPTY_LABELS, hash=False)  # policies[].match
    network_id: int | None = None  # OVN-K's `k8s.ovn.org/network-id` (the importer's VRF)

    check: Callable[[int, int], str | None] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        checker = checks.address_checker(
            self.subnets, self.gateways, self.infrastructure, self.infrastructure_addresses
        )
        if self.allowed:
            checker = _bounded(checker, self.allowed)
        object.__setattr__(self, "check", checker)

    def selects_namespace(self, namespace: str) -> bool:
        """True when the CUDN's `namespaceSelector` selects `namespace` (where OVN-K renders its NAD): by the
        Namespace's real labels when it is listed; otherwise by the one label the API server gives every namespace
        (`kubernetes.io/metadata.name`), and only when the selector reads no other label (see `selects_unlisted`)."""
        if namespace in self.namespaces:
            return True
        if namespace in self.unselected:
            return False
        return selects_unlisted(self.namespace_selector, namespace)

    def selects_node(self, labels: Mapping[str, str]) -> bool:
        """True when the network is advertised on a node with these labels (`node_selectors`)."""
        selectors_ = self.node_selectors
        return selectors_ is None or any(s.matches(labels) for s in selectors_)


NAME_LABEL = "kubernetes.io/metadata.name"
"""The label the API server sets on every Namespace: its name."""


def selects_unlisted(selector: LabelSelector | None, namespace: str) -> bool:
    """Whether `selector` selects a namespace bgpadv has not listed (a dump without Namespace objects, or a claim
    whose Namespace event has not arrived yet): only its name label is known, so the selector selects it only when
    every requirement is on that label and holds (`{}` selects it; a requirement on any other label, even `NotIn`
    or `DoesNotExist`, does not: what is unknown never selects)."""
    if selector is None:
        return False
    if any(k != NAME_LABEL for k, _ in selector.match_labels) or any(
        k != NAME_LABEL for k, _, _ in selector.match_expressions
    ):
        return False
    return selector.matches({NAME_LABEL: namespace})


def _bounded(
    checker: Callable[[int, int], str | None], allowed: tuple[SubnetRange, ...]
) -> Callable[[int, int], str | None]:
    """`checker`, and then: inside one of the `allowed` ranges (`outside-allowed-prefixes`)."""

    def check(version: int, value: int) -> str | None:
        reason = checker(version, value)
        if reason is None and checks.containing(allowed, version, value) is None:
            return checks.OUTSIDE_ALLOWED_PREFIXES
        return reason

    return check
