// Package redis is the session store on a single Redis (or Valkey) server,
// usually a master with replicas behind one address that a failover
// repoints (a Kubernetes Service, DNS name or proxy).
//
// Each node's registration is a key with a PX TTL that the lease renews every
// TTL/3; a binding is a hash naming its owner's address, incarnation and
// epoch, and is live only while the owner's registration key still exists.
// Every operation that reads and then writes is one Lua script (EVALSHA, EVAL
// when the server does not know the script), so it is atomic on the server.
// Incarnations and epochs come from one INCR counter. Membership changes are
// seen by re-reading the members every WatchInterval (expiry announces
// nothing) and at once through a pub/sub channel for joins and revocations.
//
// # READONLY recovery
//
// When a master is demoted behind the same address, the connections already
// open to it stay open, and it answers every write with "READONLY You can't
// write against a read only replica.". radix keeps any connection whose error
// is a server reply, so without help the pool would use the demoted server
// for ever. By default the store closes a pooled connection as soon as it
// answers READONLY (see ReadOnlyError): the command fails, the pool dials a
// replacement through the configured address and so reaches the new master.
// Expect about one failed write per pooled connection, plus the commands
// that were in flight on the same connection. Reads on a connection that has
// not yet written after the failover keep going to the demoted server, now
// a replica of the new master, and see its replicated (slightly late) data.
// Config.KeepConnOnReadOnly turns this off.
//
// After such a mass discard radix's pool can leave callers waiting for a
// connection until their deadline, although it has connections again (it
// wakes one waiter per connection it adds). The store withdraws a command
// that has not reached a connection within 50ms, before anything is sent,
// and queues it again.
//
// # Weaker points
//
//   - Replication is asynchronous. A binding, registration or counter
//     increment the master acknowledged just before it failed may never
//     reach the replica that takes over. After such a failover a document can
//     have two owners for a while (the lost binding's owner still believes it
//     owns the document until it resolves again), and the counter may hand
//     out an epoch again. Fencing must therefore also be enforced by the
//     database (the epoch or server_seq checks described in the design),
//     not by this store alone. Redis WAIT would narrow the window but not
//     close it, and is not used.
//   - Liveness rests on Redis key expiry, which has millisecond granularity
//     and is measured by the Redis server's clock, while the lease's end is
//     measured by the node's clock from the start of its last successful
//     renewal. A node therefore gives up its lease a little before Redis
//     expires it, unless the two clocks run at noticeably different rates.
//     TTLs are rounded up to whole milliseconds.
//   - A binding whose owner died stays in Redis, dead, until a node binds or
//     releases its key; bindings carry no TTL of their own.
//   - Scripts reach the owner's registration key by name, so the store needs
//     one Redis server, not Redis Cluster.
//   - The pub/sub channel only speeds membership watching up; a watch that
//     lost its subscription still sees every change within WatchInterval.
package redis
