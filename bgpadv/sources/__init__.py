"""Sources: the only modules that talk to the Kubernetes API (or read manifests) and hold watched objects."""
