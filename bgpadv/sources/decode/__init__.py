"""Raw objects → views (`bgpadv.core.views`): the one place the API's JSON is read, once, when an object arrives.

`dispatch.decode(resource, obj, key)` never raises, whatever `obj` holds, and costs what a well-formed object costs:
lists the planner bounds (a claim's `status.ips`, a guest's addresses) are cut before they are parsed, so a hostile
40,000-entry list costs one refusal. What is malformed becomes a `Problem` on the view, with the reason code and the
message the planner has always refused it with; the rules are those of `bgpadv.planner.networks` (CUDN definitions,
validated like OVN-K's CRD), `bgpadv.planner.nodes` and `bgpadv.planner.vms`, whose docstrings state them.

One module per kind, none doing I/O:

- `networks`: ClusterUserDefinedNetworks → `Network`;
- `route_advertisements`: RouteAdvertisements → `RouteAdvertisement`;
- `namespaces`: Namespaces → `Namespace`;
- `nodes`: Nodes → `Node`;
- `claims`: IPAMClaims → `Claim` (and the claim → VM link);
- `vmis`: VirtualMachineInstances → `Vmi` (and a live migration's state);
- `pods`: virt-launcher pods → `LauncherPod`;
- `fields`: what they all read the same way (typed fields, metadata, annotations, conditions, keys);
- `dispatch`: the entry points, `decode` (one object, by the decoder of its resource) and `state_from_objects` (a
  list of objects sorted and decoded into a `ClusterState`, for `bgpadv render`, tests and benchmarks, as the store
  does event by event).
"""
