// Package affinity binds every document to one owner node of the cluster.
//
// A node is named by its session key (SessionKey: base64 of its advertised
// host:port). A document with no live owner is placed by consistent hashing
// with bounded loads (Ring); the session store's binding, not the hash,
// decides who owns it. Requests that reach a node that does not own their
// document are redirected or forwarded to the owner.
package affinity
