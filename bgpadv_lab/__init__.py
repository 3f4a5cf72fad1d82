"""lab tooling: fake API, network namespaces, FRR — used by tests and `make demo`."""
