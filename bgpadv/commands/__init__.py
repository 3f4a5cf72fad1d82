"""The `bgpadv` command line: one module per command (render, status, check-config) and the dispatcher (cli)."""
