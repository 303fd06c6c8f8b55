package rpc

import (
	"context"
	"fmt"
)

// CallKind names the kind of document call passing the routing step.
type CallKind int

// Document call kinds.
const (
	CallAttach CallKind = iota + 1
	CallDetach
	CallRemove
	CallPushPull
	CallWatch
)

// String returns the call kind's RPC-like name, for logs.
func (k CallKind) String() string {
	switch k {
	case CallAttach:
		return "attach"
	case CallDetach:
		return "detach"
	case CallRemove:
		return "remove"
	case CallPushPull:
		return "pushpull"
	case CallWatch:
		return "watch"
	}
	return fmt.Sprintf("CallKind(%d)", int(k))
}

// DocumentCall describes one document call to the routing step. Either
// DocumentKey (AttachDocument) or DocumentID (every other call) is set.
type DocumentCall struct {
	Kind        CallKind
	ClientID    string
	DocumentID  string
	DocumentKey string
}

// Router decides whether this node serves a document call. It returns nil to
// serve the call here, or an error (typically a *connect.Error with a retryable
// code) that is returned to the client instead. A nil Router serves everything.
//
// The key of a call that only carries a document ID can be looked up with the
// lookup function passed in; it is cached by the backend.
type Router func(ctx context.Context, call DocumentCall, lookupKey func(ctx context.Context, docID string) (string, error)) error

// route is the single step every document call passes before it reaches the
// backend.
func (s *Service) route(ctx context.Context, call DocumentCall) error {
	if s.router == nil {
		return nil
	}
	if err := s.router(ctx, call, s.backend.DocumentKey); err != nil {
		return fmt.Errorf("route %s of document %s%s: %w", call.Kind, call.DocumentID, call.DocumentKey, err)
	}
	return nil
}
