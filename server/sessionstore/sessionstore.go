// Package sessionstore defines the cluster's shared record of which nodes are
// alive and which node owns which document, and the guarantees every store
// (memory, etcd, Redis) must give.
//
// Guarantees of every Store:
//   - A node is a member only while its lease lives. Register keeps the lease
//     alive in the background; when it cannot (the store is unreachable for
//     longer than the TTL, or another party revoked it), the lease's Done
//     channel closes and the node must stop serving its documents.
//   - A binding is live only while its owner's lease is alive. A binding whose
//     owner's lease ended is treated as absent by Resolve and may be taken over
//     by Bind.
//   - Bind is an atomic compare-and-set: however many nodes and goroutines bind
//     one key at once, all of them get back the same winning binding, and at no
//     time are there two live bindings for one key.
//   - Every binding carries an epoch, a fencing token. Epochs are drawn from a
//     store-wide counter, so the epoch of a key's binding only grows, in
//     particular on every change of owner.
//   - Release deletes a binding only if it is still the caller's (same owner
//     incarnation and epoch); otherwise it fails with ErrNotOwner.
//   - A role (a cluster-wide duty that one node at a time performs, such as
//     housekeeping) is held like a binding: Claim is an atomic
//     compare-and-set, the hold lives only while the holder's lease does,
//     and at no time do two live members hold one role. Roles and document
//     keys are separate namespaces.
//   - Every call takes a context first and honours its deadline. A failed call
//     leaves nothing half-written. An unreachable store gives errors wrapping
//     ErrUnavailable.
//
// The weaker points of each implementation are documented in its package.
package sessionstore

import (
	"context"
	"errors"
	"time"

	"github.com/yorkie-affinity/yorkie/server/fault"
)

// Sentinel errors that callers test with errors.Is. ErrNotMember, ErrLeaseLost
// and ErrUnavailable are retryable (fault.IsRetryable): without the store no
// node can tell who owns a document, and a node whose lease ended registers
// again and serves anew. A closed store answers fault.ErrShuttingDown.
var (
	// ErrNotOwner: the binding to release is not (any longer) the caller's.
	ErrNotOwner = errors.New("binding not owned by caller")
	// ErrNotMember: the node named as owner has no live lease.
	ErrNotMember = fault.NewRetryable("node is not a live member")
	// ErrLeaseLost: the lease has ended; the node must register again.
	ErrLeaseLost = fault.NewRetryable("lease lost")
	// ErrUnavailable: the store cannot be reached or did not answer in time.
	ErrUnavailable = fault.NewRetryable("session store unavailable")
	// ErrMalformed: the store holds a record this code cannot read.
	ErrMalformed = errors.New("malformed session store record")
)

// Member is one registration of a node.
type Member struct {
	// Addr is the node's advertised host:port, the address peers dial.
	Addr string
	// Incarnation tells registrations of one address apart: a node that
	// restarts and registers again has a new incarnation, never a reused one.
	Incarnation int64
}

// Binding says which member owns a document.
type Binding struct {
	// Key is the document key the binding is for.
	Key   string
	Owner Member
	// Epoch is the fencing token of this binding (see package comment).
	Epoch int64
}

// Lease is a node's membership. It is kept alive until Revoke or until it is lost.
type Lease interface {
	// Member is the registration the lease keeps alive.
	Member() Member
	// Done is closed when the lease has ended, by Revoke or by loss.
	Done() <-chan struct{}
	// Revoke ends the lease now; the node's bindings end with it. Revoking a
	// lease that has already ended (revoked or lost) returns nil: the caller
	// wanted it gone, and it is.
	Revoke(ctx context.Context) error
}

// MemberEventType says what happened to a member.
type MemberEventType int

// Member event types.
const (
	// MemberJoined: a new registration appeared.
	MemberJoined MemberEventType = iota + 1
	// MemberLeft: a registration ended (revoked or expired).
	MemberLeft
)

// MemberEvent is one change of membership.
type MemberEvent struct {
	Type   MemberEventType
	Member Member
}

// Store is the session store.
type Store interface {
	// Register makes addr a live member under a lease with the given TTL and
	// keeps the lease alive in the background. ctx bounds the registration
	// only: the lease outlives it.
	Register(ctx context.Context, addr string, ttl time.Duration) (Lease, error)
	// Members lists the live members.
	Members(ctx context.Context) ([]Member, error)
	// WatchMembers reports every live member as MemberJoined first, then each
	// change, until ctx ends; the channel is closed then. A consumer that falls
	// behind may miss events but not the final state: after a gap the store
	// re-reports the members as they are. A ctx that has already ended gives
	// an error wrapping ctx.Err() and no channel.
	WatchMembers(ctx context.Context) (<-chan MemberEvent, error)
	// Resolve returns the live binding of key; ok is false if there is none.
	Resolve(ctx context.Context, key string) (b Binding, ok bool, err error)
	// Bind binds key to owner unless key has a live binding, and returns the
	// binding in force: the new one or the existing winner. Owner must be a
	// live member (ErrNotMember otherwise).
	Bind(ctx context.Context, key string, owner Member) (Binding, error)
	// Release deletes b if it is still the binding in force (ErrNotOwner otherwise).
	Release(ctx context.Context, b Binding) error
	// Claim makes owner the holder of role unless a live member holds it,
	// and returns the holder in force: owner, or the member that held it
	// already. Claiming a role one holds keeps it. Owner must be a live
	// member (ErrNotMember otherwise).
	Claim(ctx context.Context, role string, owner Member) (Member, error)
	// Resign ends owner's hold of role, so another member can claim it at
	// once; it does nothing when owner does not hold the role.
	Resign(ctx context.Context, role string, owner Member) error
	// ClusterSecret returns the secret the cluster's nodes share to
	// authenticate calls between them, creating a random one on first use so
	// that nodes on one store cluster with no other configuration. Whoever
	// can read the store can read it, as they could rewrite its bindings.
	ClusterSecret(ctx context.Context) (string, error)
	// Close releases the store client's resources and stops renewing its
	// leases (they then run out after their TTL); it does not revoke them.
	// Closing twice is harmless.
	Close() error
	// Evicter ends another member's lease (evict.go).
	Evicter
}
