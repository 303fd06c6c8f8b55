package rpc

import (
	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
)

// UnaryPaths lists the URL paths of the YorkieService's unary procedures:
// the calls whose answers are written whole, which an HTTP/1.1 server may
// buffer (package http1).
func UnaryPaths() []string {
	var paths []string
	methods := api.File_yorkie_v1_yorkie_proto.Services().ByName("YorkieService").Methods()
	for i := range methods.Len() {
		m := methods.Get(i)
		if !m.IsStreamingClient() && !m.IsStreamingServer() {
			paths = append(paths, "/"+v1connect.YorkieServiceName+"/"+string(m.Name()))
		}
	}
	return paths
}
