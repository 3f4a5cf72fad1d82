"""Builders of realistic Kubernetes objects, shaped as the API returns them (see the reference notes on the APIs).

Every builder returns a plain dict with apiVersion, kind, metadata (name, namespace, uid, creationTimestamp,
labels, annotations, ownerReferences where the real controllers set them), spec and status. UIDs are derived from
kind/namespace/name, so they are stable across runs. Keyword arguments cover the variations tests need; anything
else can be changed on the returned dict.
"""

from __future__ import annotations

import copy
import functools
import ipaddress
import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

VM_NAMESPACE = "imported-vms"  # where the migrated VMs of the tests live
STATIC_VM_NAMESPACE = "static-vms"  # VMs with guest-reported (static) addresses on an IPAM-less network

DEFAULT_CREATED = "2025-03-01T09:00:00Z"
OVN_NAMESPACE = "ovn-kubernetes"


def uid(kind: str, name: str, namespace: str = "") -> str:
    """A stable UID for an object."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"bgpadv-test/{kind}/{namespace}/{name}"))


_network = functools.lru_cache(maxsize=8)(ipaddress.ip_network)


def numbered_vm_address(i: int, network: str = "10.64.0.0/12") -> str:
    """The benches' i-th VM address: the network's 10th address onwards (10.64.0.0/12 holds a million VMs;
    `bgpadv_lab/floor_feeder.py` numbers the floor's prefixes alike, with no import, to run under any interpreter)."""
    return str(_network(network)[10 + i])


def numbered_node_address(k: int) -> str:
    """The benches' worker-k address: worker-1 and worker-2 are the lab's workers; further nodes exist only as Node
    objects."""
    return f"10.0.0.{10 + k}" if k <= 2 else f"10.1.{k // 250}.{k % 250 + 1}"


def _meta(kind: str, name: str, namespace: str = "", created: str = DEFAULT_CREATED, **extra: Any) -> dict:
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    meta.update(
        {
            "uid": uid(kind, name, namespace),
            "resourceVersion": str(100000 + len(name) * 37 + len(namespace)),
            "generation": 1,
            "creationTimestamp": created,
        }
    )
    meta.update({k: v for k, v in extra.items() if v is not None})
    return meta


# --- Nodes ---------------------------------------------------------------------------------------------------------


def node(
    name: str,
    ipv4: str | None,
    ipv6: str | None = None,
    *,
    node_subnets: dict[str, str | list[str]] | None = None,
    internal_ip: bool = True,
    primary_ifaddr: bool = True,
    prefix4: int = 24,
    prefix6: int = 64,
    created: str = DEFAULT_CREATED,
    pod_subnets: Sequence[str] | None = None,
    host_cidrs: Sequence[str] = (),
    external_ips: Sequence[str] = (),
    ovn_internal: bool = False,
    labels: dict[str, str] | None = None,
) -> dict:
    """A Node with InternalIP addresses and the OVN-K annotations `node-primary-ifaddr` and `node-subnets`.

    `internal_ip=False` leaves only the annotation (the planner's fallback); `primary_ifaddr=False` drops it.
    As OVN-K writes them (`go-controller/pkg/util/node_annotations.go`): `pod_subnets` is the node's share of the
    default pod network (`node-subnets` "default", a list); `host_cidrs` are more host addresses with their masks
    beside the primary interface's (a secondary NIC, a VIP), `external_ips` ExternalIP entries of the status;
    `ovn_internal` adds the per-node join (`node-gateway-router-lrp-ifaddrs`), transit
    (`node-transit-switch-port-ifaddr`) and `node-masquerade-subnet` annotations with OVN-K's default ranges;
    `labels` are added to the kubelet's own.
    """
    annotations: dict[str, str] = {
        "k8s.ovn.org/node-chassis-id": uid("chassis", name),
        "k8s.ovn.org/node-id": str(2 + sum(map(ord, name)) % 200),
    }
    if primary_ifaddr:
        ifaddr = {}
        if ipv4:
            ifaddr["ipv4"] = f"{ipv4}/{prefix4}"
        if ipv6:
            ifaddr["ipv6"] = f"{ipv6}/{prefix6}"
        annotations["k8s.ovn.org/node-primary-ifaddr"] = json.dumps(ifaddr)
        annotations["k8s.ovn.org/host-cidrs"] = json.dumps(sorted({*ifaddr.values(), *host_cidrs}))
    elif host_cidrs:
        annotations["k8s.ovn.org/host-cidrs"] = json.dumps(sorted(host_cidrs))
    if node_subnets is not None or pod_subnets is not None:
        subnets: dict[str, str | list[str]] = {"default": list(pod_subnets)} if pod_subnets is not None else {}
        annotations["k8s.ovn.org/node-subnets"] = json.dumps({**subnets, **(node_subnets or {})})
    if ovn_internal:
        index = 2 + sum(map(ord, name)) % 200
        annotations["k8s.ovn.org/node-gateway-router-lrp-ifaddrs"] = json.dumps(
            {"default": {"ipv4": f"100.64.0.{index}/16", "ipv6": f"fd98::{index:x}/64"}}
        )
        annotations["k8s.ovn.org/node-transit-switch-port-ifaddr"] = json.dumps(
            {"ipv4": f"100.88.0.{index}/16", "ipv6": f"fd97::{index:x}/64"}
        )
        annotations["k8s.ovn.org/node-masquerade-subnet"] = json.dumps({"ipv4": "169.254.0.0/17", "ipv6": "fd69::/112"})
    addresses = []
    if internal_ip:
        addresses += [{"type": "InternalIP", "address": a} for a in (ipv4, ipv6) if a]
    addresses += [{"type": "ExternalIP", "address": a} for a in external_ips]
    addresses.append({"type": "Hostname", "address": name})
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": _meta(
            "Node",
            name,
            created=created,
            labels={
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "node-role.kubernetes.io/worker": "",
                **(labels or {}),
            },
            annotations=annotations,
        ),
        "spec": {"podCIDR": "10.244.0.0/24"},
        "status": {
            "addresses": addresses,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
            "nodeInfo": {"kubeletVersion": "v1.33.2", "containerRuntimeVersion": "cri-o://1.33.2"},
        },
    }


# --- Networks ------------------------------------------------------------------------------------------------------


def _namespace_selector(namespaces: Sequence[str]) -> dict:
    return {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": list(namespaces)}]}


def _cudn_status(created: bool) -> dict:
    if created:
        return {
            "conditions": [
                {
                    "type": "NetworkCreated",
                    "status": "True",
                    "reason": "NetworkAttachmentDefinitionCreated",
                    "message": "NetworkAttachmentDefinition has been created in following namespaces: [...]",
                    "lastTransitionTime": DEFAULT_CREATED,
                },
                {
                    "type": "NetworkAllocationSucceeded",
                    "status": "True",
                    "reason": "NetworkAllocationSucceeded",
                    "message": "Network allocation succeeded for all synced nodes.",
                    "lastTransitionTime": DEFAULT_CREATED,
                },
            ]
        }
    return {
        "conditions": [
            {
                "type": "NetworkCreated",
                "status": "False",
                "reason": "NetworkAttachmentDefinitionDeleted",
                "message": "NetworkAttachmentDefinition has been deleted",
                "lastTransitionTime": DEFAULT_CREATED,
            }
        ]
    }


def _cudn(
    name: str,
    network: dict,
    labels: dict | None,
    namespaces: Sequence[str],
    created: bool,
    deleting: bool,
    created_at: str = DEFAULT_CREATED,
    namespace_selector: dict | None = None,
):
    selector = namespace_selector if namespace_selector is not None else _namespace_selector(namespaces)
    return {
        "apiVersion": "k8s.ovn.org/v1",
        "kind": "ClusterUserDefinedNetwork",
        "metadata": _meta(
            "ClusterUserDefinedNetwork",
            name,
            created=created_at,
            labels=dict(labels) if labels else None,
            finalizers=["k8s.ovn.org/user-defined-network-protection"],
            deletionTimestamp="2025-03-02T10:00:00Z" if deleting else None,
        ),
        "spec": {"namespaceSelector": selector, "network": network},
        "status": _cudn_status(created),
    }


def cudn_layer2(
    name: str,
    subnets: Sequence[str] | None,
    *,
    labels: dict[str, str] | None = None,
    namespaces: Sequence[str] = (VM_NAMESPACE,),
    role: str = "Primary",
    infrastructure_subnets: Sequence[str] | None = None,
    reserved_subnets: Sequence[str] | None = None,
    default_gateway_ips: Sequence[str] | None = None,
    ipam_mode: str = "Enabled",
    persistent: bool = True,
    mtu: int = 1400,
    created: bool = True,
    deleting: bool = False,
    created_at: str = DEFAULT_CREATED,
    namespace_selector: dict | None = None,
    evpn: dict | None = None,
) -> dict:
    """A Layer2 ClusterUserDefinedNetwork (primary, persistent IPAM by default); `created_at` is its
    creationTimestamp, `created` its NetworkCreated condition; `namespace_selector` replaces the selector of
    `namespaces` by name; `evpn` (`{vtep, macVRF: {vni, routeTarget}, ipVRF: {...}}`) makes it `transport: EVPN`
    (the shape of ovn-kubernetes test/e2e/testscenario/cudn's EVPN scenarios)."""
    layer2: dict[str, Any] = {"role": role, "mtu": mtu}
    if subnets is not None:
        layer2["subnets"] = list(subnets)
    if infrastructure_subnets:
        layer2["infrastructureSubnets"] = list(infrastructure_subnets)
    if reserved_subnets:
        layer2["reservedSubnets"] = list(reserved_subnets)
    if default_gateway_ips:
        layer2["defaultGatewayIPs"] = list(default_gateway_ips)
    ipam: dict[str, str] = {"mode": ipam_mode}
    if persistent and ipam_mode == "Enabled":
        ipam["lifecycle"] = "Persistent"
    layer2["ipam"] = ipam
    network: dict[str, Any] = {"topology": "Layer2", "layer2": layer2}
    if evpn is not None:
        network["transport"] = "EVPN"
        network["evpn"] = evpn
    return _cudn(name, network, labels, namespaces, created, deleting, created_at, namespace_selector)


def cudn_layer3(
    name: str,
    subnets: Sequence[tuple[str, Any]],
    *,
    labels: dict[str, str] | None = None,
    namespaces: Sequence[str] = ("l3-apps",),
    role: str = "Primary",
    created: bool = True,
    deleting: bool = False,
    created_at: str = DEFAULT_CREATED,
) -> dict:
    """A Layer3 ClusterUserDefinedNetwork: `subnets` are (cidr, hostSubnet) pairs (hostSubnet None: not set)."""
    entries = [{"cidr": c} if h is None else {"cidr": c, "hostSubnet": h} for c, h in subnets]
    layer3 = {"role": role, "mtu": 1400, "subnets": entries}
    return _cudn(name, {"topology": "Layer3", "layer3": layer3}, labels, namespaces, created, deleting, created_at)


def cudn_localnet(
    name: str,
    physical_network: str,
    subnets: Sequence[str] = (),
    *,
    labels: dict[str, str] | None = None,
    namespaces: Sequence[str] = ("legacy",),
    vlan: int | None = 120,
) -> dict:
    """A Localnet ClusterUserDefinedNetwork (always Secondary, persistent IPs when it has subnets)."""
    localnet: dict[str, Any] = {"role": "Secondary", "physicalNetworkName": physical_network, "mtu": 1500}
    if subnets:
        localnet["subnets"] = list(subnets)
        localnet["ipam"] = {"mode": "Enabled", "lifecycle": "Persistent"}
    else:
        localnet["ipam"] = {"mode": "Disabled"}
    if vlan is not None:
        localnet["vlan"] = {"mode": "Access", "access": {"id": vlan}}
    return _cudn(name, {"topology": "Localnet", "localnet": localnet}, labels, namespaces, True, False)


def route_advertisements(
    name: str,
    network_selector: dict | None,
    *,
    advertisements: Sequence[str] = ("PodNetwork",),
    accepted: bool | None = True,
    generation: int = 1,
    observed_generation: int | None = 1,
    target_vrf: str | None = "default",
    node_selector: dict | None = None,
) -> dict:
    """A RouteAdvertisements selecting CUDNs by `network_selector` (None: a DefaultNetwork-only RA).

    `accepted`: True/False writes the Accepted condition; None writes no status at all. `target_vrf` None leaves
    `targetVRF` out (the default VRF); `node_selector` replaces the empty `nodeSelector`.
    """
    selectors: list[dict] = []
    if network_selector is not None:
        selectors.append(
            {
                "networkSelectionType": "ClusterUserDefinedNetworks",
                "clusterUserDefinedNetworkSelector": {"networkSelector": network_selector},
            }
        )
    else:
        selectors.append({"networkSelectionType": "DefaultNetwork"})
    ra: dict[str, Any] = {
        "apiVersion": "k8s.ovn.org/v1",
        "kind": "RouteAdvertisements",
        "metadata": {**_meta("RouteAdvertisements", name), "generation": generation},
        "spec": {
            "targetVRF": target_vrf,
            "advertisements": list(advertisements),
            "networkSelectors": selectors,
            "nodeSelector": node_selector if node_selector is not None else {},
            "frrConfigurationSelector": {"matchLabels": {"bgp": "tor"}},
        },
    }
    if target_vrf is None:
        del ra["spec"]["targetVRF"]
    if accepted is not None:
        condition: dict[str, Any] = {
            "type": "Accepted",
            "status": "True" if accepted else "False",
            "reason": "Accepted" if accepted else "ConfigurationError",
            "message": "ovn-kubernetes cluster-manager validated the resource and requested the necessary changes"
            if accepted
            else "configuration error: selected network is not primary",
            "lastTransitionTime": DEFAULT_CREATED,
        }
        if observed_generation is not None:
            condition["observedGeneration"] = observed_generation
        ra["status"] = {
            "status": "Accepted" if accepted else "Not Accepted: configuration error",
            "conditions": [condition],
        }
    return ra


# --- Claims, VMIs, launcher pods ----------------------------------------------------------------------------------


def ipam_claim(
    ns: str,
    name: str,
    vm: str | None,
    network: str,
    ips: Sequence[Any] | Any | None,
    *,
    created: str = DEFAULT_CREATED,
    owner_kind: str | None = "VirtualMachine",
    vm_label: bool = True,
    owner_pod: str | None = None,
    deleting: bool = False,
    refused: tuple[str, str] | None = None,
    condition_status: str = "False",
) -> dict:
    """An IPAMClaim as kubevirt/ipam-extensions creates it and OVN-K fills its status.

    `vm` names the VM (label `kubevirt.io/vm` and the ownerReference); `ips` None leaves no status at all (an old
    CRD, or OVN-K has not allocated yet); `[]` is a pending allocation. `refused` (reason, message): OVN-K's refusal
    as its cluster manager writes it (`status.ips` emptied, `ownerPod`, an `IPsAllocated` condition of status
    `condition_status` with that reason and message; compared with a live one in tests/kube/test_ovnk.py).
    """
    labels = {"kubevirt.io/vm": vm} if vm and vm_label else None
    owners = None
    if vm and owner_kind:
        owners = [
            {
                "apiVersion": "kubevirt.io/v1",
                "kind": owner_kind,
                "name": vm,
                "uid": uid(owner_kind, vm, ns),
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
    claim: dict[str, Any] = {
        "apiVersion": "k8s.cni.cncf.io/v1alpha1",
        "kind": "IPAMClaim",
        "metadata": _meta(
            "IPAMClaim",
            name,
            ns,
            created,
            labels=labels,
            finalizers=["kubevirt.io/persistent-ipam"],
            ownerReferences=owners,
            deletionTimestamp="2025-03-02T10:00:00Z" if deleting else None,
        ),
        "spec": {"network": network, "interface": ""},
    }
    if ips is not None:
        status: dict[str, Any] = {"ips": list(ips) if isinstance(ips, list | tuple) else ips}
        if isinstance(ips, list | tuple) and ips:
            status["ownerPod"] = {"name": owner_pod or f"virt-launcher-{vm or name}-x7k2p"}
            status["conditions"] = [
                {
                    "type": "IPsAllocated",
                    "status": "True",
                    "reason": "SuccessfulAllocation",
                    "message": "IP addresses successfully allocated",
                    "observedGeneration": 1,
                    "lastTransitionTime": created,
                }
            ]
        if refused is not None:
            status["ips"] = []
            status["ownerPod"] = {"name": owner_pod or f"virt-launcher-{vm or name}-x7k2p"}
            status["conditions"] = [
                {
                    "type": "IPsAllocated",
                    "status": condition_status,
                    "reason": refused[0],
                    "message": refused[1],
                    "observedGeneration": 1,
                    "lastTransitionTime": created,
                }
            ]
        claim["status"] = status
    return claim


def interface(
    ips: Sequence[str],
    *,
    name: str = "default",
    pod_interface: str = "ovn-udn1",
    mac: str = "02:7b:4c:00:00:05",
    info_source: str = "domain, guest-agent, multus-status",
) -> dict:
    """One VMI status.interfaces[] entry (bare IPs, as KubeVirt reports them)."""
    entry: dict[str, Any] = {
        "name": name,
        "mac": mac,
        "interfaceName": "eth0",
        "podInterfaceName": pod_interface,
        "infoSource": info_source,
        "queueCount": 1,
        "linkState": "up",
        "ipAddresses": list(ips),
    }
    if ips:
        entry["ipAddress"] = ips[0]
    return entry


def migration_state(
    source: str,
    target: str,
    *,
    target_ready: str | None = None,
    completed: bool = False,
    failed: bool = False,
    abort_requested: bool = False,
    abort_status: str | None = None,
    vmi: str = "vm",
    decentralized: str | None = None,
    ns: str = VM_NAMESPACE,
) -> dict:
    """A VMI status.migrationState (`target_ready`: targetNodeDomainReadyTimestamp).

    `decentralized` ("source" or "target": the side this VMI is): a cross-cluster live migration, with the
    `sourceState`/`targetState` blocks of kubevirt.io/api core/v1/types.go (`VirtualMachineInstanceMigrationSourceState`
    / `...TargetState`); the other side's VMI lives in another cluster (another uid) and `targetNode` names a node of
    the target cluster. Only one side carries a `syncAddress` (`IsDecentralizedMigration`)."""
    state: dict[str, Any] = {
        "migrationUid": uid("VirtualMachineInstanceMigration", vmi),
        "sourceNode": source,
        "sourcePod": f"virt-launcher-{vmi}-src01",
        "targetNode": target,
        "targetPod": f"virt-launcher-{vmi}-tgt01",
        "targetNodeAddress": "10.128.0.9",
        "startTimestamp": "2025-03-01T10:00:00Z",
        "mode": "PreCopy",
        "targetNodeDomainDetected": target_ready is not None,
    }
    if target_ready is not None:
        state["targetNodeDomainReadyTimestamp"] = target_ready
    if completed or failed:
        state["endTimestamp"] = "2025-03-01T10:00:30Z"
        state["completed"] = completed
    if failed:
        state["failed"] = True
        state["failureReason"] = "Live migration failed: target domain did not start"
    if abort_requested:
        state["abortRequested"] = True
    if abort_status is not None:
        state["abortStatus"] = abort_status
    if decentralized:
        here = uid("VirtualMachineInstance", vmi, ns)
        there = uid("VirtualMachineInstance", vmi, f"{ns}@other-cluster")
        source_uid, target_uid = (here, there) if decentralized == "source" else (there, here)
        migration = uid("VirtualMachineInstanceMigration", vmi)
        state["sourceState"] = {
            "migrationUID": migration,
            "node": source,
            "pod": state["sourcePod"],
            "domainName": vmi,
            "domainNamespace": ns,
            "virtualMachineInstanceUID": source_uid,
            "nodeSelectors": {"kubernetes.io/arch": "amd64"},
        }
        state["targetState"] = {
            "migrationUID": migration,
            "node": target,
            "pod": state["targetPod"],
            "domainName": vmi,
            "domainNamespace": ns,
            "virtualMachineInstanceUID": target_uid,
            "syncAddress": "sync.kubevirt.cluster-b.example.com:9185",
            "nodeAddress": "10.128.0.9",
            "domainDetected": target_ready is not None,
        }
        if target_ready is not None:
            state["targetState"]["domainReadyTimestamp"] = target_ready
    return state


def vmi(
    ns: str,
    name: str,
    node: str | None,
    phase: str = "Running",
    interfaces: Sequence[dict] | None = None,
    migration_state: dict | None = None,
    *,
    created: str = DEFAULT_CREATED,
    secondary: Sequence[tuple[str, str]] = (),
    labels: dict[str, str] | None = None,
) -> dict:
    """A VirtualMachineInstance owned by its VirtualMachine, on `node` (status.nodeName). `secondary`: more
    interfaces as (interface name, `multus.networkName`), bridged to a NetworkAttachmentDefinition. `labels`: the
    VM template's own labels (e.g. `bgpadv.io/wave: "3"`), beside the ones KubeVirt sets."""
    labels = {**(labels or {}), "kubevirt.io/vm": name, "kubevirt.io/domain": name}
    if node:
        labels["kubevirt.io/nodeName"] = node
    if migration_state and not migration_state.get("completed") and not migration_state.get("failed"):
        labels["kubevirt.io/migrationTargetNodeName"] = migration_state.get("targetNode", "")
    status: dict[str, Any] = {
        "phase": phase,
        "interfaces": list(interfaces or []),
        "conditions": [{"type": "Ready", "status": "True" if phase == "Running" else "False"}],
        "guestOSInfo": {"id": "rhel", "name": "Red Hat Enterprise Linux"},
    }
    if node:
        status["nodeName"] = node
        status["activePods"] = {uid("Pod", f"virt-launcher-{name}", ns): node}
    if migration_state is not None:
        status["migrationState"] = migration_state
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstance",
        "metadata": _meta(
            "VirtualMachineInstance",
            name,
            ns,
            created,
            labels=labels,
            finalizers=["kubevirt.io/virtualMachineControllerFinalize", "foregroundDeleteVirtualMachine"],
            ownerReferences=[
                {
                    "apiVersion": "kubevirt.io/v1",
                    "kind": "VirtualMachine",
                    "name": name,
                    "uid": uid("VirtualMachine", name, ns),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        ),
        "spec": {
            "domain": {
                "devices": {
                    "interfaces": [
                        {"name": "default", "binding": {"name": "l2bridge"}},
                        *({"name": n, "bridge": {}} for n, _nad in secondary),
                    ]
                }
            },
            "networks": [
                {"name": "default", "pod": {}},
                *({"name": n, "multus": {"networkName": nad}} for n, nad in secondary),
            ],
        },
        "status": status,
    }


# The routes OVN-K's cluster manager gives a primary Layer2 UDN pod, per family: the service CIDR and the network's
# join subnet (OVN-K's defaults), via the network's gateway (the lab's service CIDRs 10.96.0.0/16, fd00:10:96::/112).
_PRIMARY_ROUTES = {4: ("10.96.0.0/16", "100.65.0.0/16"), 6: ("fd00:10:96::/112", "fd99::/64")}


def _ovn_mac(ip: str) -> str:
    """The MAC OVN-K derives from a pod's first address: 0a:58 and the address's last four bytes."""
    try:
        packed = ipaddress.ip_interface(ip).ip.packed[-4:]
    except ValueError:
        return "0a:58:c0:a8:64:0a"
    return "0a:58:" + ":".join(f"{b:02x}" for b in packed)


def pod_networks(ns: str, nad: str, ips: Sequence[str], *, tunnel_id: int = 3) -> dict:
    """OVN-K's `k8s.ovn.org/pod-networks` value for a pod on primary UDN `<ns>/<nad>` (see `launcher_pod`).

    The primary entry has the keys OVN-K's cluster manager writes (compared with a live one in
    tests/kube/test_ovnk.py): `ip_addresses`, `mac_address` (from the first address), `gateway_ips`, `routes`
    (service CIDR and join subnet via the gateway), `ipv6_lla_gateway_ip` with an IPv6 address, `tunnel_id`, `role`;
    the deprecated single forms `ip_address`/`gateway_ip` beside a single address. The `default` entry
    (`infrastructure-locked`) is the per-node controller's, which a cluster manager alone does not write."""
    primary: dict[str, Any] = {"ip_addresses": list(ips), "mac_address": _ovn_mac(ips[0] if ips else "")}
    gateways = []
    routes = []
    for ip in ips:
        try:
            network = ipaddress.ip_interface(ip).network
        except ValueError:
            continue  # a hostile test value: OVN-K never writes one, but the test wants to see it refused
        if network.prefixlen < network.max_prefixlen:
            gateway = str(network.network_address + 1)
            gateways.append(gateway)
            routes += [{"dest": dest, "nextHop": gateway} for dest in _PRIMARY_ROUTES[network.version]]
            if network.version == 6:
                primary["ipv6_lla_gateway_ip"] = "fe80::858:64ff:fe41:a2"
    if gateways:
        primary["gateway_ips"] = gateways
        primary["routes"] = sorted(routes, key=lambda r: (":" in r["dest"], r["dest"]))
    if len(ips) == 1:
        primary["ip_address"] = ips[0]
        if gateways:
            primary["gateway_ip"] = gateways[0]
    primary["tunnel_id"] = tunnel_id
    primary["role"] = "primary"
    return {
        "default": {
            "ip_addresses": ["10.244.1.17/24"],
            "mac_address": "0a:58:0a:f4:01:11",
            "routes": [{"dest": "10.96.0.0/16", "nextHop": "10.244.1.1"}],
            "ip_address": "10.244.1.17/24",
            "role": "infrastructure-locked",
        },
        f"{ns}/{nad}": primary,
    }


CLAIM_ANNOTATION = "k8s.ovn.org/primary-udn-ipamclaim"  # deprecated by OVN-K for DEFAULT_NETWORK_ANNOTATION
DEFAULT_NETWORK_ANNOTATION = "v1.multus-cni.io/default-network"


def launcher_pod(
    ns: str,
    vmi_name: str,
    node: str,
    *,
    suffix: str = "x7k2p",
    claim: str | None = None,
    ips: Sequence[str] = (),
    nad: str | None = None,
    target_ready: str | None = None,
    migration_job: str | None = None,
    phase: str = "Running",
    domain_annotation: bool = True,
    created_by: bool = True,
    runs_for: str | None = None,
    claim_via: str = CLAIM_ANNOTATION,
    static_ips: Sequence[str] = (),
) -> dict:
    """A virt-launcher pod of `vmi_name` on `node` (a migration target when `migration_job` is set).

    `claim`: the IPAMClaim the pod's primary-network address comes from, referenced as `claim_via` says: the
    deprecated `k8s.ovn.org/primary-udn-ipamclaim` annotation (`CLAIM_ANNOTATION`) or the `ipam-claim-reference` of
    the `v1.multus-cni.io/default-network` selection (`DEFAULT_NETWORK_ANNOTATION`, OVN-K's default network
    `ovn-kubernetes/default`), which OVN-K prefers when both are there. `static_ips`: addresses the pod asks for in
    that selection (`ips`, honoured with OVN-K's preconfigured UDN addresses).

    `ips` + `nad`: OVN-K's `k8s.ovn.org/pod-networks` annotation as it writes it for a primary UDN pod (the NAD name
    `<ns>/<nad>` as key, role `primary`, `ip_addresses` with the subnet mask, the deprecated `ip_address` beside a
    single address, `gateway_ips`; the cluster default network kept as `infrastructure-locked`): the shape of
    go-controller/pkg/util/pod_annotation.go (`podAnnotation`, `MarshalPodAnnotation`) and of the annotations in
    its clustermanager/endpointslicemirror tests. `runs_for`: the VMI whose uid the pod's ownerReference and
    created-by label state (default `vmi_name`; another name forges a pod that only carries `vmi_name`'s domain
    annotation and labels)."""
    owner = runs_for or vmi_name
    name = f"virt-launcher-{vmi_name}-{suffix}"
    labels = {
        "kubevirt.io": "virt-launcher",
        "kubevirt.io/vm": vmi_name,
        "kubevirt.io/domain": vmi_name,
        "vm.kubevirt.io/name": vmi_name,
        "vmi.kubevirt.io/id": vmi_name,
    }
    if created_by:
        labels["kubevirt.io/created-by"] = uid("VirtualMachineInstance", owner, ns)
    if migration_job:
        labels["kubevirt.io/migrationJobUID"] = migration_job
    annotations: dict[str, str] = {}
    if domain_annotation:
        annotations["kubevirt.io/domain"] = vmi_name
    if claim and claim_via == CLAIM_ANNOTATION:
        annotations[CLAIM_ANNOTATION] = claim
    selection: dict[str, Any] = {"name": "default", "namespace": "ovn-kubernetes"}
    if claim and claim_via == DEFAULT_NETWORK_ANNOTATION:
        selection["ipam-claim-reference"] = claim
    if static_ips:
        selection["ips"] = list(static_ips)
    if len(selection) > 2:
        annotations[DEFAULT_NETWORK_ANNOTATION] = json.dumps([selection], separators=(",", ":"))
    if ips and nad:
        annotations["k8s.ovn.org/pod-networks"] = json.dumps(pod_networks(ns, nad, ips), separators=(",", ":"))
    if target_ready:
        annotations["kubevirt.io/migration-target-ready-timestamp"] = target_ready
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": _meta(
            "Pod",
            name,
            ns,
            labels=labels,
            annotations=annotations,
            ownerReferences=[
                {
                    "apiVersion": "kubevirt.io/v1",
                    "kind": "VirtualMachineInstance",
                    "name": owner,
                    "uid": uid("VirtualMachineInstance", owner, ns),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        ),
        "spec": {
            "nodeName": node,
            "containers": [{"name": "compute", "image": "quay.io/kubevirt/virt-launcher:v1.6.0"}],
        },
        "status": {"phase": phase, "podIP": "10.244.1.17", "podIPs": [{"ip": "10.244.1.17"}]},
    }


def owned_by(pod: dict, vmi_uid: str) -> dict:
    """`pod` bound to the VMI of uid `vmi_uid` as virt-controller binds a launcher pod (its ownerReference and its
    `kubevirt.io/created-by` label): for an API server that gave the VMI its own uid (a fake or real apiserver)."""
    pod["metadata"]["ownerReferences"][0]["uid"] = vmi_uid
    if "kubevirt.io/created-by" in pod["metadata"]["labels"]:
        pod["metadata"]["labels"]["kubevirt.io/created-by"] = vmi_uid
    return pod


def rebound(pod: dict, uids: Mapping[str, str]) -> dict:
    """A copy of a dumped launcher `pod` bound, as virt-controller binds it, to the uids an API server gave its VMI
    when the dump was loaded (`uids`: dumped uid → new uid; its ownerReferences and `kubevirt.io/created-by` label):
    a pod whose uids are not in `uids` is left as dumped."""
    pod = copy.deepcopy(pod)
    meta = pod["metadata"]
    for ref in meta.get("ownerReferences") or ():
        ref["uid"] = uids.get(ref.get("uid", ""), ref.get("uid"))
    labels = meta.get("labels") or {}
    if "kubevirt.io/created-by" in labels:
        labels["kubevirt.io/created-by"] = uids.get(labels["kubevirt.io/created-by"], labels["kubevirt.io/created-by"])
    return pod


def namespace(name: str, labels: dict[str, str] | None = None, *, created: str = DEFAULT_CREATED) -> dict:
    """A Namespace with its labels (the API server adds `kubernetes.io/metadata.name` to every namespace)."""
    all_labels = {"kubernetes.io/metadata.name": name, **(labels or {})}
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": _meta("Namespace", name, created=created, labels=all_labels),
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    }


def as_list(objects: Iterable[dict]) -> dict:
    """Objects wrapped the way `kubectl get -o yaml` writes several kinds."""
    return {"apiVersion": "v1", "kind": "List", "items": list(objects), "metadata": {"resourceVersion": ""}}


# --- States and configurations -------------------------------------------------------------------------------------

ADVERTISED = {"bgpadv.io/advertise": "true"}


def bulk_vm_address(i: int) -> str:
    """The i-th VM address of `vms_on_one_node`: 192.168.100.10 onwards, 240 per /24."""
    return f"192.168.{100 + i // 240}.{i % 240 + 10}"


def vms_on_one_node(count: int, node_address: str = "10.0.0.11", namespace: str = VM_NAMESPACE) -> list[dict]:
    """A bulk cluster for load tests and benchmarks: worker-1 at `node_address`, the Layer2 CUDN vmnet-a
    (192.168.0.0/16, selected) and `count` running VMs on worker-1, each with its claim (`bulk_vm_address(i)`)."""
    objs = [node("worker-1", node_address, "fd00::11"), cudn_layer2("vmnet-a", ["192.168.0.0/16"], labels=ADVERTISED)]
    for i in range(count):
        ip = bulk_vm_address(i)
        objs.append(ipam_claim(namespace, f"vm-{i}.default", f"vm-{i}", "cluster_udn_vmnet-a", [f"{ip}/16"]))
        objs.append(vmi(namespace, f"vm-{i}", "worker-1", interfaces=[interface([ip])]))
    return objs


def state(*objects: dict | Iterable[dict]):
    """A ClusterState from objects (lists of objects are flattened), decoded as the store decodes them."""
    from bgpadv.sources.decode.dispatch import state_from_objects

    flat: list[dict] = []
    for o in objects:
        if isinstance(o, dict):
            flat.append(o)
        else:
            flat.extend(o)
    return state_from_objects(flat)[0]


def config(**overrides: Any):
    """A validated Config: the lab's (AS 64513, ToR 10.0.0.1 AS 64512, CUDNs labelled bgpadv.io/advertise=true),
    with top-level camelCase keys replaced by `overrides` (`networks` is merged)."""
    from bgpadv.config import parse

    raw: dict[str, Any] = {
        "localASN": 64513,
        "peers": [{"address": "10.0.0.1", "asn": 64512}],
        "networks": {"selector": {"matchLabels": dict(ADVERTISED)}},
    }
    networks = overrides.pop("networks", None)
    if networks is not None:
        raw["networks"] = {**raw["networks"], **networks}
        raw["networks"] = {k: v for k, v in raw["networks"].items() if v is not None}
    raw.update(overrides)
    return parse(raw)
