// Package fault is the error vocabulary every layer of the server shares: it
// states which failures a client may retry, and holds the one sentinel for a
// component that is closing. Each layer marks its own retryable failures
// here, so the RPC error mapping asks one question instead of knowing the
// sentinels of the database, the session store and the routing.
package fault

import "errors"

// Retryable is implemented by errors that say whether the same call may
// succeed if the client tries it again later (on this node or another):
// another owner took the document, a store is briefly unreachable.
type Retryable interface {
	error
	Retryable() bool
}

// IsRetryable reports whether err, or an error it wraps, is marked
// retryable.
func IsRetryable(err error) bool {
	var r Retryable
	return errors.As(err, &r) && r.Retryable()
}

// NewRetryable returns a sentinel error with the message text that
// IsRetryable recognises through any wrapping.
func NewRetryable(text string) error {
	return &retryable{text: text}
}

// retryable is the sentinel NewRetryable builds; a pointer, so that each
// sentinel is only equal to itself.
type retryable struct{ text string }

func (e *retryable) Error() string { return e.text }

// Retryable reports true: it is the mark this type carries.
func (e *retryable) Retryable() bool { return true }

// ErrShuttingDown is the cause of every call refused or ended because a part
// of the server (the backend, its event bus, the channels, the session store
// client, the RPC service) is closing. Clients retry it, on another node or
// after the restart; the RPC layer gives it its own code name, so it is not
// marked retryable here but tested by identity.
var ErrShuttingDown = errors.New("server is shutting down")
