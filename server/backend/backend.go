// Package backend holds the document logic of the server: clients, attaching
// and detaching documents, the PushPull exchange of changes, and the document
// event subscriptions behind Watch. The RPC layer decodes and validates
// requests, calls these methods and maps their sentinel errors to wire codes.
package backend

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// Sentinel errors that the RPC layer tests with errors.Is and maps to codes.
var (
	// ErrClientNotFound: no client has the given ID.
	ErrClientNotFound = errors.New("client not found")
	// ErrClientNotActivated: the client exists but is deactivated.
	ErrClientNotActivated = errors.New("client not activated")
	// ErrDocumentNotFound: no document has the given ID.
	ErrDocumentNotFound = errors.New("document not found")
	// ErrDocumentNotAttached: the client has not attached the document.
	ErrDocumentNotAttached = errors.New("document not attached")
	// ErrDocumentRemoved: the document was removed.
	ErrDocumentRemoved = errors.New("document removed")
	// ErrInvalidClientSeq: the pushed changes leave a gap after, or go back
	// before, what the server has stored for the client.
	ErrInvalidClientSeq = errors.New("invalid client_seq")
	// ErrInvalidChangePack: the pack is malformed (no checkpoint, a change of
	// another actor, non-consecutive client_seq values, ...).
	ErrInvalidChangePack = errors.New("invalid change pack")
	// ErrTooManyChanges: the pack holds more changes than the server accepts.
	ErrTooManyChanges = errors.New("too many changes in pack")
	// ErrShuttingDown: the backend is closing; clients should retry elsewhere.
	ErrShuttingDown = errors.New("server shutting down")
)

// Config holds the backend's dependencies and options.
type Config struct {
	// DB stores clients, documents, attachments and changes. Required.
	DB database.Database
	// MaxChangesPerPack bounds the changes of one pushed pack (default 1000).
	MaxChangesPerPack int
	// Logger receives operational logs (default slog.Default()).
	Logger *slog.Logger
	// Metrics, when set, is where the backend counts its work, so a metrics
	// exporter can read it; nil gives the backend a private one.
	Metrics *Metrics
	// Epoch returns the owner epoch this node holds for a document, supplied
	// by a cluster layer. Nil means a single node: epoch 0.
	Epoch func(ctx context.Context, docID string) (int64, error)
}

// Metrics counts the backend's work with atomic counters. It needs no global
// registry: an exporter reads the fields when scraped.
type Metrics struct {
	// PushPulls counts PushPull, attach, detach and remove exchanges served.
	PushPulls atomic.Int64
	// ChangesStored counts changes appended to document logs.
	ChangesStored atomic.Int64
	// ChangesSent counts changes returned to clients.
	ChangesSent atomic.Int64
	// Conflicts counts appends that lost a server_seq race and were retried.
	Conflicts atomic.Int64
	// Subscriptions is the number of live Watch subscriptions.
	Subscriptions atomic.Int64
}

// Event is one document event delivered to a subscriber.
type Event struct {
	Type      api.DocEventType
	Publisher string
}

// Subscription delivers the events of one document to one watching client.
type Subscription struct{}

// Events returns the channel of events for the subscriber.
func (s *Subscription) Events() <-chan Event { return nil }

// Done is closed when the backend ends the subscription; Err says why.
func (s *Subscription) Done() <-chan struct{} { return nil }

// Err returns why the backend ended the subscription (nil while it runs or
// after the subscriber closed it itself).
func (s *Subscription) Err() error { return nil }

// Close unsubscribes and announces UNWATCHED to the other watchers. It may be
// called more than once.
func (s *Subscription) Close() {}

// Backend is the document logic of one server node.
type Backend struct{}

var errNotImplemented = errors.New("not implemented yet")

// New builds a backend from cfg.
func New(cfg Config) (*Backend, error) { return nil, errNotImplemented }

// Close ends every subscription with ErrShuttingDown.
func (b *Backend) Close(ctx context.Context) error { return errNotImplemented }

// ActivateClient activates (creating if needed) the client with the key.
func (b *Backend) ActivateClient(ctx context.Context, key string, metadata map[string]string) (*database.ClientInfo, error) {
	return nil, errNotImplemented
}

// DeactivateClient detaches every document the client has attached (storing a
// presence-clear change for it and notifying watchers), ends its
// subscriptions, then marks it deactivated.
func (b *Backend) DeactivateClient(ctx context.Context, clientID string) error {
	return errNotImplemented
}

// AttachDocument creates the document if needed, attaches the client and runs
// the pack like PushPull.
func (b *Backend) AttachDocument(ctx context.Context, clientID, docKey string, pack *api.ChangePack) (string, *api.ChangePack, error) {
	return "", nil, errNotImplemented
}

// DetachDocument stores the pack, then marks the client's attachment detached.
func (b *Backend) DetachDocument(ctx context.Context, clientID, docID string, pack *api.ChangePack) (*api.ChangePack, error) {
	return nil, errNotImplemented
}

// RemoveDocument stores the pack and marks the document removed.
func (b *Backend) RemoveDocument(ctx context.Context, clientID, docID string, pack *api.ChangePack) (*api.ChangePack, error) {
	return nil, errNotImplemented
}

// PushPull stores the client's new changes and returns the changes of others
// it has not seen (none when pushOnly).
func (b *Backend) PushPull(ctx context.Context, clientID, docID string, pack *api.ChangePack, pushOnly bool) (*api.ChangePack, error) {
	return nil, errNotImplemented
}

// Watch subscribes the client to the document's events. watchers lists the
// client IDs watching the document now, the new one included.
func (b *Backend) Watch(ctx context.Context, clientID, docID string) (*Subscription, []string, error) {
	return nil, nil, errNotImplemented
}

// DocumentKey returns the key of a document ID.
func (b *Backend) DocumentKey(ctx context.Context, docID string) (string, error) {
	return "", errNotImplemented
}

// ReleaseDocument tells the backend this node no longer owns the document:
// its cached state is dropped and its subscriptions end with cause (which
// should be retryable for clients, e.g. wrap database.ErrFenced).
func (b *Backend) ReleaseDocument(docID string, cause error) {}
