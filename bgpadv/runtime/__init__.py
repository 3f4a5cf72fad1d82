"""The running service: the controller loop and its wiring, the seams it drives, live reload, the supervisor of
ExaBGP and the API shim."""
