package rpc

import (
	"google.golang.org/protobuf/reflect/protoreflect"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
)

// UnaryPaths lists the URL paths of the YorkieService's unary procedures:
// the calls whose answers are written whole, which an HTTP/1.1 server may
// buffer (package http1).
func UnaryPaths() []string {
	return procedurePaths(func(m protoreflect.MethodDescriptor) bool {
		return !m.IsStreamingClient() && !m.IsStreamingServer()
	})
}

// StreamPaths lists the URL paths of the YorkieService's server-streaming
// procedures (the Watch forms).
func StreamPaths() []string {
	return procedurePaths(func(m protoreflect.MethodDescriptor) bool {
		return m.IsStreamingServer() && !m.IsStreamingClient()
	})
}

// procedurePaths lists the URL paths of the YorkieService's procedures
// that keep says to.
func procedurePaths(keep func(protoreflect.MethodDescriptor) bool) []string {
	var paths []string
	methods := api.File_yorkie_v1_yorkie_proto.Services().ByName("YorkieService").Methods()
	for i := range methods.Len() {
		if m := methods.Get(i); keep(m) {
			paths = append(paths, "/"+v1connect.YorkieServiceName+"/"+string(m.Name()))
		}
	}
	return paths
}
