// Package interceptor holds the Connect interceptors the node's services
// run in: the RPC metrics, the log of failed calls and clients' activity.
package interceptor
