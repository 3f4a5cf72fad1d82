"""IPAMClaims: which network, which VM, which addresses (rules 1-3 of `vms`), read from `views.Claim`."""

from __future__ import annotations

from collections.abc import Mapping

from bgpadv.core import reasons
from bgpadv.core.bounded import describe
from bgpadv.core.views import Claim
from bgpadv.planner import checks
from bgpadv.planner.candidates import CLAIM, Collector, Record
from bgpadv.planner.networks import CUDN_PREFIX, Network, Networks

Resolved = tuple[Network | None, tuple[str, str, str] | None]
"""(network, None) to go on; (None, (reason, message, cudn)) to refuse; (None, None) to skip silently."""


class NetworkResolver:
    """Maps a claim's `spec.network` to an advertised Network, or to the refusal every claim naming it gets (rule 1).

    Results are cached per network name: a cluster has few networks and many claims.
    """

    def __init__(self, networks: Networks):
        self._networks = networks
        self._cache: dict[str, Resolved] = {}

    def resolve(self, net_name: str) -> Resolved:
        found = self._cache.get(net_name)
        if found is None:
            found = self._cache[net_name] = self._resolve(net_name)
        return found

    def _resolve(self, net_name: str) -> Resolved:
        networks = self._networks
        if net_name.startswith(CUDN_PREFIX):
            cudn = net_name[len(CUDN_PREFIX) :]
            network = networks.advertised.get(cudn)
            if network is not None and network.topology != "Layer2":
                where = "only on Layer2 and Localnet networks"
                message = f"CUDN {cudn} is {network.topology}: OVN-K honours persistent IPs (IPAMClaims) {where}"
                return None, (checks.PERSISTENT_IPS_NOT_SUPPORTED, message, cudn)
            if network is not None or cudn in networks.withdrawn:
                return network, None
            refused = networks.claim_refusals.get(cudn)
            if refused is not None:
                return None, (refused[0], refused[1], cudn)
            return None, (checks.UNKNOWN_NETWORK, f"no ClusterUserDefinedNetwork {describe(cudn)}", "")
        if "_" in net_name:
            return None, (checks.NAMESPACED_UDN_NOT_ADVERTISABLE, "RouteAdvertisements cannot select a UDN", "")
        message = "not the network name of a ClusterUserDefinedNetwork: a NetworkAttachmentDefinition's network"
        return None, (reasons.FOREIGN_NETWORK, message, "")


def read_claim(claim: Claim, resolve: NetworkResolver, out: Collector) -> None:
    """One IPAMClaim into `out`: its refusal, or its record (rules 1-3, up to validation)."""
    ref = claim.ref
    if not claim.identified:
        out.refuse(ref, "metadata", checks.MALFORMED_OBJECT, "no name/namespace")
        return
    net_name = claim.network
    if net_name is None:
        out.refuse(ref, claim.network_text, checks.MALFORMED_OBJECT, "spec.network is missing or not a string")
        return
    network, refused = resolve.resolve(net_name)
    if network is None:
        if refused is not None:
            out.refuse(ref, claim.network_text, refused[0], refused[1], refused[2])
        return
    if claim.deleting:
        return  # being deleted
    namespace = ref.namespace
    if not network.selects_namespace(namespace):
        message = f"CUDN {network.name} does not select namespace {describe(namespace)} (no NAD of it there)"
        out.refuse(ref, describe(namespace), reasons.NAMESPACE_NOT_SELECTED, message, network.name)
        return  # never a party to the duplicate rule
    refused_by_platform = claim.allocation_refused
    if refused_by_platform is not None:  # OVN-K said no (IPsAllocated False): its words, not "pending"
        p = refused_by_platform
        out.refuse(ref, p.value, p.reason, p.message, network.name)
        return
    if claim.ips_pending:
        return  # allocation pending: nothing to announce yet
    if claim.ips_malformed is not None:
        malformed = claim.ips_malformed
        out.refuse(ref, malformed.value, malformed.reason, malformed.message, network.name)
        return
    if claim.vm is None:
        problem = claim.vm_problem  # set by the decoder whenever it found no VM
        if problem is not None:
            out.refuse(ref, problem.value, problem.reason, problem.message, network.name)
        return
    out.records.append(Record(claim.ips, network, ref, (ref.namespace, claim.vm), claim.age, CLAIM, claim.ips_refused))


def read_claims(claims: Mapping[tuple[str, str], Claim], networks: Networks, out: Collector) -> None:
    """Read IPAMClaims (`ClusterState.ipam_claims`, or any part of it) into `out`: rules 1-3 up to validation."""
    resolve = NetworkResolver(networks)
    for claim in claims.values():
        read_claim(claim, resolve, out)
