// Package interceptor holds the Connect interceptors the node's services run in.
//
// They record the RPC metrics, log failed calls and tell housekeeping about
// clients' activity.
package interceptor
