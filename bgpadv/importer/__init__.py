"""Egress import: the peers' routes into each listed network's routing table (its VRF's), protocol 186.

`learned` keeps what the peers sent (graceful restart included), `policy` decides what each table should hold (pure),
`netlink` talks to the kernel (pyroute2), `reconciler` makes the tables match, level-based.
"""
