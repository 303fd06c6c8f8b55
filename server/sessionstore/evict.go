package sessionstore

import "context"

// Evicter ends another node's lease on the store's side. A node that has
// seen proof that a member's process is gone (its port refuses connections)
// evicts it, so the member's documents can be bound again at once instead of
// when its lease runs out.
//
// Guarantees of every Evict:
//   - It ends exactly the registration m (address and incarnation): a later
//     registration of the same address is left alone.
//   - Afterwards m is no member: its bindings and roles are free for Bind and
//     Claim (with larger epochs, as after an expiry), Members no longer lists
//     it and watchers see it leave.
//   - Evicting a registration that has already ended (or never existed)
//     returns nil: the caller wanted it gone, and it is.
//   - If m's node is in fact alive, its lease's Done closes no later than
//     its next renewal. Until then it may still believe it owns its
//     documents: what keeps a document's log single is the database's epoch
//     fencing, never the timing of Done.
type Evicter interface {
	Evict(ctx context.Context, m Member) error
}
