package routing

import "github.com/yorkie-affinity/yorkie/api/yorkie/cluster/v1/clusterv1connect"

// ClusterOf returns the ClusterService of the member at addr (a Route's
// Addr): the AdminService's document and channel calls reach the owner
// there.
func (r *Router) ClusterOf(addr string) clusterv1connect.ClusterServiceClient {
	return r.cfg.Peers.Cluster(addr)
}

// Others returns the ClusterService of every other live member, for the
// calls every node answers for itself (the AdminService's channel list).
func (r *Router) Others() []clusterv1connect.ClusterServiceClient {
	var out []clusterv1connect.ClusterServiceClient
	for _, addr := range r.cfg.Owners.Members() {
		if addr != r.cfg.Owners.Addr() {
			out = append(out, r.cfg.Peers.Cluster(addr))
		}
	}
	return out
}
