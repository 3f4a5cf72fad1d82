"""Path attributes per route: `attributes` and `policies[]`. Pure: no I/O.

A route's attributes are the configuration's `attributes`, then every policy that matches the route, in the order of
`policies[]`: a policy's `localPreference`, `med` or `asPathPrepend` replaces what was there (so a later, more
specific policy wins over an earlier, general one), its `communities` and `largeCommunities` are added (each value
once, in first-seen order). A policy matches when every key of its `match` does:

- `kinds`: the route's kind (`subnet`, `host`); omitted: both.
- `networks`: the CUDN's name; `networkSelector`: the CUDN's labels.
- `vmSelector`: the labels of the VM's VirtualMachineInstance (KubeVirt copies a VM's `spec.template.metadata.labels`
  there); `namespaceSelector`: the VM's Namespace labels. Host routes only: a subnet belongs to no VM.

The outcome depends on the configuration and on those labels only, never on which replica or node computes it, so
every replica sends identical attributes for the same route (ORIGIN is always IGP) and the ToR can spread traffic over
them (ECMP). Equal outcomes are one shared `Attributes` object (the speaker groups its bulk announcements by them).
Both planner forms call this module: `plan()` and `IncrementalPlanner` agree by construction; the incremental planner
recomputes a host route when its VMI's or Namespace's labels change (`uses_vm_labels`, `uses_namespace_labels`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from bgpadv.config import Config
from bgpadv.core.model import Attributes, RouteKind
from bgpadv.core.state import ClusterState
from bgpadv.core.views import EMPTY_LABELS
from bgpadv.planner.advertised import Network
from bgpadv.planner.candidates import Candidate

__all__ = ["Policies", "host_attributes"]


class Policies:
    """The compiled `attributes` + `policies[]` of one configuration."""

    def __init__(self, config: Config) -> None:
        self.base = config.attributes
        self.policies = config.policies
        self.uses_vm_labels = any(p.match.vm_selector is not None for p in self.policies)
        self.uses_namespace_labels = any(p.match.namespace_selector is not None for p in self.policies)
        self._memo: dict[tuple[int, ...], Attributes] = {(): self.base}

    def _matching(
        self,
        kind: RouteKind,
        network: Network,
        vm_labels: Mapping[str, str] | None,
        namespace_labels: Mapping[str, str] | None,
    ) -> tuple[int, ...]:
        out: list[int] = []
        for i, policy in enumerate(self.policies):
            m = policy.match
            if m.kinds and kind.value not in m.kinds:
                continue
            if m.networks and network.name not in m.networks:
                continue
            if m.network_selector is not None and not m.network_selector.matches(network.labels):
                continue
            if m.describes_vm:
                if kind is not RouteKind.HOST:
                    continue
                if m.vm_selector is not None and not m.vm_selector.matches(vm_labels or EMPTY_LABELS):
                    continue
                if m.namespace_selector is not None and not m.namespace_selector.matches(
                    namespace_labels or EMPTY_LABELS
                ):
                    continue
            out.append(i)
        return tuple(out)

    def _combined(self, matched: tuple[int, ...]) -> Attributes:
        found = self._memo.get(matched)
        if found is not None:
            return found
        base = self.base
        local_preference, med, prepend = base.local_preference, base.med, base.as_path_prepend
        communities = dict.fromkeys(base.communities)
        large = dict.fromkeys(base.large_communities)
        for i in matched:
            s = self.policies[i].actions
            if s.local_preference is not None:
                local_preference = s.local_preference
            if s.med is not None:
                med = s.med
            if s.as_path_prepend is not None:
                prepend = s.as_path_prepend
            communities.update(dict.fromkeys(s.communities))
            large.update(dict.fromkeys(s.large_communities))
        attributes = Attributes(local_preference, med, tuple(communities), tuple(large), prepend)
        if attributes == base:
            attributes = base
        else:  # one object per distinct outcome
            attributes = next((a for a in self._memo.values() if a == attributes), attributes)
        self._memo[matched] = attributes
        return attributes

    def subnet(self, network: Network) -> Attributes:
        """The attributes of `network`'s subnet routes."""
        if not self.policies:
            return self.base
        return self._combined(self._matching(RouteKind.SUBNET, network, None, None))

    def host(
        self,
        network: Network,
        vm_labels: Mapping[str, str] | None,
        namespace_labels: Mapping[str, str] | None,
    ) -> Attributes:
        """The attributes of a VM's host route on `network` (labels None: the VMI or Namespace is unknown)."""
        if not self.policies:
            return self.base
        return self._combined(self._matching(RouteKind.HOST, network, vm_labels, namespace_labels))


def host_attributes(state: ClusterState, policies: Policies) -> Callable[[Candidate], Attributes]:
    """Per winning candidate: its host route's attributes from its VMI's and Namespace's labels in `state`."""
    if not policies.policies:
        base = policies.base
        return lambda _candidate: base
    vmis, namespaces = state.vmis, state.namespaces

    def of(candidate: Candidate) -> Attributes:
        vmi = vmis.get(candidate.vmi)
        namespace = namespaces.get(candidate.vmi[0])
        return policies.host(
            candidate.network,
            vmi.labels if vmi is not None else None,
            namespace.labels if namespace is not None else None,
        )

    return of
