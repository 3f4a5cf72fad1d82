"""virt-launcher pods → `views.LauncherPod`: the VMI it runs (ownerReference, domain annotation), its node, the
primary addresses OVN-K assigned it (`k8s.ovn.org/pod-networks`) and the IPAMClaim its address comes from."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from bgpadv.core import reasons
from bgpadv.core.bounded import describe
from bgpadv.core.views import LauncherPod, PodNetwork, Problem
from bgpadv.sources.decode.claims import claim_ips
from bgpadv.sources.decode.fields import _EMPTY, _json, _key_pair, _list, _map, _nonempty, _shared, _str, _version
from bgpadv.sources.decode.vmis import VMI_KIND

DOMAIN_ANNOTATION = "kubevirt.io/domain"
CREATED_BY_LABEL = "kubevirt.io/created-by"
TARGET_READY_ANNOTATION = "kubevirt.io/migration-target-ready-timestamp"
POD_NETWORKS_ANNOTATION = "k8s.ovn.org/pod-networks"
"""OVN-K's per-pod assignment, keyed by NAD name `<namespace>/<name>` (go-controller/pkg/util/pod_annotation.go,
`MarshalPodAnnotation`; `GetNADName` in pkg/util/multi_network.go)."""
# A launcher pod's claim reference: the `ipam-claim-reference` of its default-network selection, else the deprecated
# annotation (`_claim_ref`).
CLAIM_ANNOTATION = "k8s.ovn.org/primary-udn-ipamclaim"
DEFAULT_NETWORK_ANNOTATION = "v1.multus-cni.io/default-network"
MAX_POD_NETWORKS = 16
"""Most entries of `k8s.ovn.org/pod-networks` read per pod (a pod has one primary network and a few secondary ones)."""


def _vmi_owner(meta: Mapping) -> tuple[str | None, str | None]:
    """(name, uid) of the pod's VirtualMachineInstance ownerReference (virt-controller sets one, controller: true)."""
    for owner in _list(meta.get("ownerReferences"))[:16]:
        if isinstance(owner, dict) and owner.get("kind") == VMI_KIND:
            name, uid = _nonempty(owner.get("name")), _nonempty(owner.get("uid"))
            return (_shared(name) if name else None), (_shared(uid) if uid else None)
    return None, None


def _pod_network(entry: object) -> PodNetwork | None:
    """One `k8s.ovn.org/pod-networks` entry of role `primary` (None: another role, or not a mapping)."""
    if not isinstance(entry, dict) or entry.get("role") != "primary":
        return None
    values = entry.get("ip_addresses")
    if values is None and entry.get("ip_address") is not None:
        values = [entry.get("ip_address")]  # the deprecated single-address form
    if values is None:
        return PodNetwork()
    if not isinstance(values, list):
        return PodNetwork(refused=Problem(describe(values), reasons.MALFORMED_OBJECT, "ip_addresses is not a list"))
    addresses, problem = claim_ips(values)
    if problem is not None:
        message = problem.message.replace("status.ips", "ip_addresses").replace("the claim is", "it is")
        problem = Problem(problem.value, problem.reason, message)
    return PodNetwork(addresses, problem)


def _pod_networks(annotations: Mapping) -> tuple[Mapping[str, PodNetwork], Problem | None]:
    """The primary entries of `k8s.ovn.org/pod-networks` by NAD name, or the problem of the annotation."""
    raw = annotations.get(POD_NETWORKS_ANNOTATION)
    if raw is None:
        return _EMPTY, None
    decoded, ok = _json(annotations, POD_NETWORKS_ANNOTATION)
    if not ok or not isinstance(decoded, dict):
        message = f"annotation {POD_NETWORKS_ANNOTATION} is not a JSON object"
        return _EMPTY, Problem(describe(raw), reasons.MALFORMED_OBJECT, message)
    out: dict[str, PodNetwork] = {}
    for nad, entry in list(decoded.items())[:MAX_POD_NETWORKS]:
        network = _pod_network(entry)
        if network is not None and isinstance(nad, str):
            out[nad] = network
    return MappingProxyType(out), None


def _claim_ref(annotations: Mapping) -> str | None:
    """The IPAMClaim the pod's primary address comes from, as OVN-K reads it (go-controller/pkg/util/multi_network.go):
    the deprecated annotation, overridden by a non-empty `ipam-claim-reference` of the default-network selection."""
    ref = annotations.get(CLAIM_ANNOTATION)
    selections, ok = _json(annotations, DEFAULT_NETWORK_ANNOTATION)
    if ok and isinstance(selections, list) and len(selections) == 1 and isinstance(selections[0], dict):
        chosen = selections[0].get("ipam-claim-reference")
        if isinstance(chosen, str) and chosen:
            ref = chosen
    return describe(ref) if isinstance(ref, str) and ref else None


def decode_launcher_pod(obj: object, key: object = None) -> LauncherPod:
    raw = _map(obj)
    meta = _map(raw.get("metadata"))
    namespace = meta.get("namespace")
    namespace = _shared(namespace) if isinstance(namespace, str) else namespace
    pkey = _key_pair(key) if key is not None else (_str(namespace), _str(meta.get("name")))
    pkey = (_shared(pkey[0]), pkey[1])
    annotations = _map(meta.get("annotations"))
    domain = annotations.get(DOMAIN_ANNOTATION)
    created_by = _map(meta.get("labels")).get(CREATED_BY_LABEL)
    node = _map(raw.get("spec")).get("nodeName")
    node = _shared(node) if isinstance(node, str) else node
    owner_name, owner_uid = _vmi_owner(meta)
    networks, problem = _pod_networks(annotations)
    return LauncherPod(
        key=pkey,
        resource_version=_version(meta),
        namespace=namespace if isinstance(namespace, str) else None,
        domain=_shared(domain) if isinstance(domain, str) else None,
        created_by=_shared(created_by) if isinstance(created_by, str) and created_by else None,
        owner_name=owner_name,
        owner_uid=owner_uid,
        node=node if isinstance(node, str) else None,
        finished=_map(raw.get("status")).get("phase") in ("Failed", "Succeeded"),
        target_ready=bool(annotations.get(TARGET_READY_ANNOTATION)),
        networks=networks,
        networks_problem=problem,
        claim_ref=_claim_ref(annotations),
    )
