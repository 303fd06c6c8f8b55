// Package mongo is the session store on a MongoDB-wire server (MongoDB or
// FerretDB), so that a cluster needs nothing but the database it already
// uses: nodes on one database share leases, bindings, epochs and roles
// through collections prefixed "session_" (Config.Prefix).
//
// # What is atomic
//
// The store relies on two operations only, because FerretDB makes nothing
// else atomic (it runs an update or a filtered delete as a read followed by a
// write by _id, so two racing conditional writes can both succeed):
//
//   - an insert that fails on a duplicate _id, and
//   - a delete by _id alone.
//
// Every compare-and-set is built from them:
//
//   - counter: store-wide values are inserted as _id = n, never below the
//     node's clock in microseconds (like the memory store, so epochs keep
//     growing across store switches and restarts). A value is kept only if,
//     after its insert, it is still the largest: a drawer whose view was
//     stale tries again. Incarnations and epochs come from it.
//   - members: one record per registration, _id "<incarnation>:<addr>",
//     holding a heartbeat number that only its own node changes.
//   - bindings and roles: one slot per key, _id = key, inserted when absent.
//     A slot whose owner is dead (or that its owner releases) is replaced by
//     first inserting a takeover marker named after the slot's epoch: the
//     one caller whose marker insert succeeds deletes the slot and may insert
//     a new one; everybody else reads again. A marker whose holder did not
//     finish (it crashed between the two steps) stops blocking after
//     Config.TakeoverTimeout, when the next attempt number may be taken.
//
// # Lease expiry: observation, not timestamps
//
// No clock of one machine is compared with another's. A node renews its
// lease by changing its heartbeat every TTL/3, and ends the lease itself,
// as the other stores do, when no renewal succeeded for a whole TTL counted
// from the start of its last successful one. Another client declares the
// member dead once it has seen the same heartbeat for longer than the TTL
// (plus a 2% allowance for clock rates), measured on its own monotonic clock
// from the first time it read that heartbeat. That first read comes after
// the heartbeat was written, which came after the owner started the request,
// so the owner always gives up first unless the two clocks run at noticeably
// different rates: the same assumption the Redis store makes, without its
// dependence on the server's clock. The price is that a client that has
// never seen a member takes up to a TTL to declare it dead: after all nodes
// restart, a document bound to a node that died meanwhile moves one TTL
// later than with Redis. Nodes watch the members all the time, so in a
// running cluster the observation is at most one watch interval old.
// A member record observed dead is deleted, so later readers need not wait.
// A client never declares its own lease dead while the lease lasts there (a
// busy server answering renewals late must not make a node refuse its own
// bindings); a deleted record (revoked, evicted, declared dead by another
// node) ends the membership for every client at once.
//
// # Weaker points
//
//   - Membership changes are polled (every Config.WatchInterval): FerretDB
//     has no change streams. Registrations and revocations by the same
//     client are reported at once.
//   - Checking that the new owner is a member and inserting its binding are
//     two steps: a lease revoked in between leaves a binding whose owner is
//     dead, which every reader treats as absent.
//   - A renewal that lands just as another client declares the member dead
//     (it started before the owner's deadline but reached the server late)
//     may let the owner believe, until its next renewal, that it still owns
//     a document another node has taken over. A takeover marker's holder
//     that stalls for longer than TakeoverTimeout between its two steps can
//     likewise delete a newer slot. Fencing by the database's epochs keeps
//     the document's log intact in both cases, as with the other stores.
//   - Takeover markers are deleted ten minutes after their creation by the
//     clock of the node that prunes them, so clocks should agree within
//     minutes; a marker deleted early could only matter to a takeover that
//     stalled that long.
package mongo
