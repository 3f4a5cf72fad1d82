"""bgpadv: advertise KubeVirt VM and OVN-Kubernetes UDN routes to the fabric through ExaBGP."""

__version__ = "0.1.0"
