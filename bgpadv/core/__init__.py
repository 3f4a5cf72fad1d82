"""The bottom layer: values every other package shares — the route model, resource identities, label selectors,
bounded text and the bounded YAML/JSON loader, the cluster state the planner reads. No I/O, no other bgpadv import."""
