// Package dpusim stands in for OVN-Kubernetes' DPU simulator library, whose pinned version the Go module proxy
// does not serve. OVN-Kubernetes reads these names only in its simulated-DPU mode, which the test tier never runs;
// they exist so the cluster manager links. The values follow the naming the simulator documents (host interfaces
// <prefix><pf>-<func>, representors rep<pf>-<func>, QEMU's locally administered OUI).
package dpusim

import "regexp"

const (
	// MacOUI prefixes the MACs of simulated host-to-DPU interfaces.
	MacOUI = "52:54:00"
	// DPURepresentorFmt names a representor from its PF and function index.
	DPURepresentorFmt = "rep%s-%s"
	// HostGatewayPeerInterface is the DPU side of the host gateway channel.
	HostGatewayPeerInterface = "rep0-0"
	// HostGatewayInterfaceIndex is the host gateway channel's index.
	HostGatewayInterfaceIndex = 0
)

// ReSimulationNetdevFunc matches a simulated netdev name, capturing its PF and function index.
var ReSimulationNetdevFunc = regexp.MustCompile(`^.*?(\d+)-(\d+)$`)
