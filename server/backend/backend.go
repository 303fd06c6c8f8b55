// Package backend holds the document logic of the server: clients, attaching
// and detaching documents, the PushPull exchange of changes, and the document
// event subscriptions behind Watch. The RPC layer decodes and validates
// requests, calls these methods and maps their sentinel errors to wire codes.
//
// Each document served by this node has a small state here (its head
// server_seq, the attachments of its clients) behind a per-document lock, so
// the exchanges of one document are serialised and get consecutive server_seq
// values, while different documents run in parallel. The database stays the
// truth: the state is reloaded from it whenever a write's outcome is unsure.
package backend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/backend/pubsub"
	"github.com/yorkie-affinity/yorkie/server/fault"
)

// Errors name the call that failed (push pull, attach document "key") and the
// subjects nothing below them names: the database's errors name the client or
// document they were about, so the backend does not repeat them, and the RPC
// layer, whose client knows what it asked, adds nothing.

// Sentinel errors that the RPC layer tests with errors.Is and maps to codes.
// An unknown client or document is database.ErrClientNotFound or
// database.ErrDocumentNotFound, passed on; a closing backend answers
// fault.ErrShuttingDown.
var (
	// ErrClientNotActivated: the client exists but is deactivated.
	ErrClientNotActivated = errors.New("client not activated")
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
	// ErrDocumentReleased: this node gave up the document (another node owns
	// it now); retryable, the client goes on with the new owner.
	ErrDocumentReleased = fault.NewRetryable("document released by this node")
	// ErrStaleRoute: the call was routed with an owner epoch older than the
	// document's claim in the database, and the backend changed nothing.
	// The binding has been dropped, so routing the call again binds afresh:
	// retryable.
	ErrStaleRoute = fault.NewRetryable("routed with an epoch older than the document's claim")
	// ErrInvalidChange: a pushed change does not apply to the document. The
	// error also wraps the document package's sentinel naming the problem
	// (document.ErrInvalidOperation, ErrElementNotFound, ...). Nothing of the
	// pack is stored.
	ErrInvalidChange = errors.New("change does not apply")
	// ErrDocumentSizeExceedsLimit: applying the pushed changes would take the
	// document past Config.SizeHardLimitFactor times its size limit. Nothing
	// of the pack is stored.
	ErrDocumentSizeExceedsLimit = errors.New("document size exceeds the limit")
	// ErrDocumentBroken: the document's stored snapshot and log could not be
	// rebuilt into a document. It is the server's fault, not the caller's.
	ErrDocumentBroken = errors.New("stored document does not rebuild")
)

// Defaults of the Config options.
const (
	// DefaultMaxChangesPerPack is the default bound on the changes of one pack.
	DefaultMaxChangesPerPack = 1000
	// DefaultSnapshotInterval is how many changes separate stored snapshots
	// by default, as upstream.
	DefaultSnapshotInterval = 500
	// DefaultSnapshotThreshold is how many changes behind a client must be to
	// get a snapshot instead of changes, by default.
	DefaultSnapshotThreshold = 500
	// DefaultMaxSizePerDocument is the default document size limit (10 MiB,
	// as upstream), counted as the SDK counts it.
	DefaultMaxSizePerDocument = 10 << 20
	// DefaultDocumentCacheBytes bounds the documents kept in memory by
	// default, by their estimated size.
	DefaultDocumentCacheBytes = 1 << 30
	// DefaultSizeHardLimitFactor is by default how many times its size
	// limit a document may reach before the server refuses a push.
	DefaultSizeHardLimitFactor = 4
)

// Config holds the backend's dependencies and options.
type Config struct {
	// DB stores clients, documents, attachments and changes. Required.
	DB database.Database
	// MaxChangesPerPack bounds the changes stored by one PushPull or attach
	// (default 1000); the client sends the rest on its next PushPull.
	MaxChangesPerPack int
	// Logger receives operational logs (default slog.Default()).
	Logger *slog.Logger
	// Metrics, when set, is where the backend counts its work, so a metrics
	// exporter can read it; nil gives the backend a private one.
	Metrics *Metrics
	// WatchQueueSize bounds the WATCHED/UNWATCHED events waiting for one
	// subscriber before it is ended (default 256).
	WatchQueueSize int
	// OnFenced is told the ID, project and key of a document whose write or
	// claim the database refused because a newer owner epoch had claimed
	// it; the backend has already dropped the document. A cluster layer uses
	// it to forget its belief that this node owns the document.
	OnFenced func(docID string, name DocName)
	// SnapshotInterval is how many changes separate the stored snapshots of
	// a document (default DefaultSnapshotInterval; negative: none stored).
	SnapshotInterval int
	// SnapshotThreshold is how many changes behind a client must be for its
	// answer to carry a snapshot instead of changes (default
	// DefaultSnapshotThreshold; negative: never).
	SnapshotThreshold int
	// MaxSizePerDocument bounds a document's size, live and garbage bytes
	// as the SDK counts them (default DefaultMaxSizePerDocument; negative:
	// no bound). Clients learn it on attach: the SDK refuses a local edit
	// past it and always accepts remote ones, so concurrent edits may take
	// a document past it, which the server accepts as upstream does.
	MaxSizePerDocument int
	// SizeHardLimitFactor is the server's own bound, against clients that
	// skip the SDK's check: a push that takes a document past this many
	// times its size limit is refused (default DefaultSizeHardLimitFactor;
	// negative: none).
	SizeHardLimitFactor int
	// DocumentCacheBytes bounds the documents this node keeps built in
	// memory, by their estimated size (default DefaultDocumentCacheBytes);
	// the least recently used go first and are rebuilt when used again.
	DocumentCacheBytes int64
	// OnRootChanged, when set, is told after this node stored changes that
	// edit a document's content (operations, not presence alone), with the
	// context and the project of the call that stored them. It must not
	// block: the event webhook debounces and posts on its own.
	OnRootChanged func(ctx context.Context, p *database.ProjectInfo, docKey string)
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
	// PullsFromWindow counts pulls served from the newest changes the
	// owner kept of its own appends, without reading the log.
	PullsFromWindow atomic.Int64
	// Conflicts counts appends that lost a server_seq race and were retried.
	Conflicts atomic.Int64
	// Subscriptions is the number of live Watch subscriptions.
	Subscriptions atomic.Int64
	// ChangesRefused counts pushed changes refused because they do not apply
	// or would exceed the document size limit.
	ChangesRefused atomic.Int64
	// DocumentsBuilt counts documents built from a snapshot and the log.
	DocumentsBuilt atomic.Int64
	// DocumentsWarmed counts documents built or brought forward here
	// before their binding moved here (WarmDocument).
	DocumentsWarmed atomic.Int64
	// SnapshotsStored and SnapshotFailures count snapshot saves.
	SnapshotsStored  atomic.Int64
	SnapshotFailures atomic.Int64
	// SnapshotsSent counts answers that carried a snapshot.
	SnapshotsSent atomic.Int64
	// GarbageCollected counts tombstones the server purged.
	GarbageCollected atomic.Int64
	// CachedDocumentBytes is the estimated heap of the documents held built
	// (and of the states their snapshots were taken of).
	CachedDocumentBytes atomic.Int64
	// SnapshotsCoalesced counts due snapshots passed over for a newer one
	// because the document's previous snapshot was still being taken.
	SnapshotsCoalesced atomic.Int64
	// SnapshotLockNanos is how long documents' locks were held to hand
	// snapshots over (or, in the baseline mode, to encode them).
	SnapshotLockNanos atomic.Int64
	// AnswerLockNanos is how long documents' locks were held to prepare
	// snapshot answers (encoding excluded, but in the baseline mode).
	AnswerLockNanos atomic.Int64
	// RevisionsStored counts revisions stored, on request or at snapshots;
	// RevisionsRestored the restores applied.
	RevisionsStored   atomic.Int64
	RevisionsRestored atomic.Int64
	// Compactions counts documents whose history was compacted.
	Compactions atomic.Int64
	// AnswerSnapshotSeconds, when set, observes the time to build the
	// snapshot of each answer to a client far behind.
	AnswerSnapshotSeconds Observer
	// SnapshotRuns, when set, counts the goroutines taking snapshots.
	SnapshotRuns Gauge
}

// Event is one document event delivered to a subscriber.
type Event = pubsub.Event

// Subscription delivers the events of one document to one watching client:
// Events() yields them, Done() is closed when the backend ends the
// subscription (Err() says why), Close() unsubscribes (idempotent) and
// announces UNWATCHED to the other watchers.
type Subscription = pubsub.Subscription

// Backend is the document logic of one server node.
type Backend struct {
	db      database.Database
	logger  *slog.Logger
	metrics *Metrics
	fenced  func(docID string, name DocName)
	changed func(ctx context.Context, p *database.ProjectInfo, docKey string)
	maxPack int
	// snapInterval, snapThreshold and maxDocSize are the Config options, with
	// 0 meaning off.
	snapInterval  int64
	snapThreshold int64
	maxDocSize    int
	hardFactor    int
	cache         *docCache
	windows       windowBudget
	attWrites     attWrites
	ps            *pubsub.PubSub
	closing       atomic.Bool

	// snapRuns counts the snapshot runs under way; once snapClosed (under
	// snapMu) no new one starts, so Close can wait for them.
	snapMu     sync.Mutex
	snapClosed bool
	snapRuns   sync.WaitGroup
	// beforeEncode, when set by a test, runs in a snapshot run before it
	// encodes, so a test can hold a run there.
	beforeEncode func(docID string, seq int64)
	// beforeAnswer, when set by a test, runs before a snapshot answer is
	// encoded off the lock, so a test can hold it there.
	beforeAnswer func(docID string, seq int64)

	// clients caches the IDs of clients known to be activated, with their
	// project, so PushPull does not read the client record on every call.
	// A plain map: a sync.Map's entry costs three times the memory, in
	// pointers the collector walks, for every client this node serves.
	clientsMu sync.RWMutex
	clients   map[string]string // client ID -> project ID

	mu    sync.RWMutex
	docs  map[string]*docState // by document ID, documents served here
	names docNames
}

// DocName is what names a document to clients: its project and its key,
// unique among the project's live documents.
type DocName struct {
	Project string
	Key     string
}

// New builds a backend from cfg.
func New(cfg Config) (*Backend, error) {
	if cfg.DB == nil {
		return nil, errors.New("backend: Config.DB is required")
	}
	if cfg.MaxChangesPerPack <= 0 {
		cfg.MaxChangesPerPack = DefaultMaxChangesPerPack
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Metrics == nil {
		cfg.Metrics = &Metrics{}
	}
	if cfg.OnFenced == nil {
		cfg.OnFenced = func(string, DocName) {}
	}
	if cfg.SnapshotInterval == 0 {
		cfg.SnapshotInterval = DefaultSnapshotInterval
	}
	if cfg.SnapshotThreshold == 0 {
		cfg.SnapshotThreshold = DefaultSnapshotThreshold
	}
	if cfg.MaxSizePerDocument == 0 {
		cfg.MaxSizePerDocument = DefaultMaxSizePerDocument
	}
	if cfg.SizeHardLimitFactor == 0 {
		cfg.SizeHardLimitFactor = DefaultSizeHardLimitFactor
	}
	if cfg.DocumentCacheBytes <= 0 {
		cfg.DocumentCacheBytes = DefaultDocumentCacheBytes
	}
	return &Backend{
		db:            cfg.DB,
		logger:        cfg.Logger,
		metrics:       cfg.Metrics,
		fenced:        cfg.OnFenced,
		changed:       cfg.OnRootChanged,
		maxPack:       cfg.MaxChangesPerPack,
		snapInterval:  int64(max(cfg.SnapshotInterval, 0)),
		snapThreshold: int64(max(cfg.SnapshotThreshold, 0)),
		maxDocSize:    max(cfg.MaxSizePerDocument, 0),
		hardFactor:    max(cfg.SizeHardLimitFactor, 0),
		cache:         newDocCache(cfg.DocumentCacheBytes, &cfg.Metrics.CachedDocumentBytes),
		windows:       windowBudget{limit: recentBudget},
		ps: pubsub.New(pubsub.Config{
			QueueSize: cfg.WatchQueueSize,
			Live:      &cfg.Metrics.Subscriptions,
		}),
		clients: make(map[string]string),
		docs:    make(map[string]*docState),
		names:   newDocNames(),
	}, nil
}

// Close ends every subscription with fault.ErrShuttingDown, refuses later calls
// and waits for the snapshots being taken to be stored (as long as ctx
// lets it). It does not close the database, which the backend does not own.
func (b *Backend) Close(ctx context.Context) error {
	b.closing.Store(true)
	b.ps.Close(fault.ErrShuttingDown)
	return b.waitSnapshots(ctx)
}

// MaxSizePerDocument is the server's document size limit (0: none), which a
// project's own overrides (DocumentSizeLimit).
func (b *Backend) MaxSizePerDocument() int { return b.maxDocSize }

// Metrics returns the counters of the backend's work.
func (b *Backend) Metrics() *Metrics { return b.metrics }

func (b *Backend) checkOpen() error {
	if b.closing.Load() {
		return fault.ErrShuttingDown
	}
	return nil
}

// ActivateClient activates a new client with the key in project p.
func (b *Backend) ActivateClient(ctx context.Context, p *database.ProjectInfo, key string, metadata map[string]string) (*database.ClientInfo, error) {
	if err := b.checkOpen(); err != nil {
		return nil, err
	}
	pid, err := projectID(p)
	if err != nil {
		return nil, fmt.Errorf("activate client %q: %w", key, err)
	}
	// The database names the operation and the key: nothing to add.
	info, err := b.db.ActivateClient(ctx, pid, key, metadata)
	if err != nil {
		return nil, err
	}
	b.knowActivated(info.ID, info.ProjectID)
	return info, nil
}

// CheckClient fails with database.ErrClientNotFound or ErrClientNotActivated
// unless the client exists in project p and is activated.
func (b *Backend) CheckClient(ctx context.Context, p *database.ProjectInfo, clientID string) error {
	return b.ensureActivated(ctx, p, clientID)
}

// ensureActivated fails unless the client exists in project p and is
// activated: another project's client is not found.
func (b *Backend) ensureActivated(ctx context.Context, p *database.ProjectInfo, clientID string) error {
	pid, err := projectID(p)
	if err != nil {
		return fmt.Errorf("client %s: %w", clientID, err)
	}
	if p, ok := b.activatedIn(clientID); ok {
		if p == pid {
			return nil
		}
		return fmt.Errorf("client %s of project %s: %w", clientID, pid, database.ErrClientNotFound)
	}
	// The database's error names the client already.
	info, err := b.db.FindClient(ctx, pid, clientID)
	if err != nil {
		return err
	}
	if info.Status != database.ClientActivated {
		return fmt.Errorf("client %s: %w", clientID, ErrClientNotActivated)
	}
	b.knowActivated(clientID, pid)
	return nil
}

// activatedIn returns the project of a client known to be activated.
func (b *Backend) activatedIn(clientID string) (string, bool) {
	b.clientsMu.RLock()
	p, ok := b.clients[clientID]
	b.clientsMu.RUnlock()
	return p, ok
}

func (b *Backend) knowActivated(clientID, projectID string) {
	b.clientsMu.Lock()
	b.clients[clientID] = projectID
	b.clientsMu.Unlock()
}

// forgetClient drops a client from the activated ones: its next call here
// reads its status again.
func (b *Backend) forgetClient(clientID string) {
	b.clientsMu.Lock()
	delete(b.clients, clientID)
	b.clientsMu.Unlock()
}

// inProject reports whether the client exists in project p.
func (b *Backend) inProject(ctx context.Context, p *database.ProjectInfo, clientID string) (bool, error) {
	pid, err := projectID(p)
	if err != nil {
		return false, fmt.Errorf("client %s: %w", clientID, err)
	}
	if p, ok := b.activatedIn(clientID); ok {
		return p == pid, nil
	}
	_, err = b.db.FindClient(ctx, pid, clientID)
	if errors.Is(err, database.ErrClientNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, nil
}

// DeactivateClient detaches every document the client has attached (storing a
// presence-clear change for it and notifying watchers), ends its
// subscriptions, then marks it deactivated.
func (b *Backend) DeactivateClient(ctx context.Context, p *database.ProjectInfo, clientID string, epochs map[string]int64) error {
	if err := b.checkOpen(); err != nil {
		return err
	}
	pid, err := projectID(p)
	if err != nil {
		return fmt.Errorf("deactivate client %s: %w", clientID, err)
	}
	if _, err := b.db.FindClient(ctx, pid, clientID); err != nil {
		return err
	}
	atts, err := b.db.ListClientAttachments(ctx, clientID)
	if err != nil {
		return err
	}
	for _, a := range atts {
		if err := b.detachOnDeactivate(ctx, p, epochs[a.DocID], clientID, a.DocID); err != nil {
			return err
		}
	}
	b.forgetClient(clientID)
	b.ps.EndClient(clientID, fmt.Errorf("client %s deactivated: %w", clientID, ErrClientNotActivated))
	if _, err := b.db.DeactivateClient(ctx, pid, clientID); err != nil {
		return err
	}
	return nil
}

// AttachedDocuments returns the IDs of the documents the client of project p
// has attached. A cluster layer uses it to detach a deactivating client at
// each owner.
func (b *Backend) AttachedDocuments(ctx context.Context, p *database.ProjectInfo, clientID string) ([]string, error) {
	// An unknown client, or another project's, has no documents here.
	if ok, err := b.inProject(ctx, p, clientID); err != nil || !ok {
		return nil, err
	}
	atts, err := b.db.ListClientAttachments(ctx, clientID)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(atts))
	for i, a := range atts {
		ids[i] = a.DocID
	}
	return ids, nil
}

// CountAttachedDocuments returns how many documents the client has attached;
// an unknown client, or another project's, has none.
func (b *Backend) CountAttachedDocuments(ctx context.Context, p *database.ProjectInfo, clientID string) (int, error) {
	if ok, err := b.inProject(ctx, p, clientID); err != nil || !ok {
		return 0, err
	}
	return b.db.CountClientAttachments(ctx, clientID)
}

// DetachClient detaches a deactivating client from one document on the
// server's initiative, as DeactivateClient does for each: a presence-clear
// change is stored for it, its streams on this node end and the other
// watchers are told. Detaching a client that is not attached does nothing.
func (b *Backend) DetachClient(ctx context.Context, p *database.ProjectInfo, epoch int64, clientID, docID string) error {
	if err := b.checkOpen(); err != nil {
		return err
	}
	if err := b.detachOnDeactivate(ctx, p, epoch, clientID, docID); err != nil {
		return fmt.Errorf("detach client %s: %w", clientID, err)
	}
	// The client is going away: its streams here end and the other watchers
	// hear UNWATCHED, as on the node that deactivates it, and its next call
	// here reads its status again.
	b.forgetClient(clientID)
	b.ps.EndClient(clientID, fmt.Errorf("client %s deactivated: %w", clientID, ErrClientNotActivated))
	return nil
}

// Watch subscribes the client to the document's events. watchers lists the
// client IDs watching the document now, the new one included; the others
// receive WATCHED, and UNWATCHED when the subscription is closed.
func (b *Backend) Watch(ctx context.Context, p *database.ProjectInfo, epoch int64, clientID, docID string) (*Subscription, []string, error) {
	var watchers []string
	sub, err := fresh(ctx, b, docID, func() (*Subscription, error) {
		var (
			sub *Subscription
			err error
		)
		sub, watchers, err = b.watch(ctx, p, epoch, clientID, docID)
		return sub, err
	})
	return sub, watchers, err
}

func (b *Backend) watch(ctx context.Context, p *database.ProjectInfo, epoch int64, clientID, docID string) (*Subscription, []string, error) {
	if err := b.checkOpen(); err != nil {
		return nil, nil, err
	}
	if err := b.ensureActivated(ctx, p, clientID); err != nil {
		return nil, nil, fmt.Errorf("watch: %w", err)
	}
	ds, err := b.lockDoc(ctx, p, epoch, docID)
	if err != nil {
		return nil, nil, fmt.Errorf("watch: %w", err)
	}
	defer ds.unlock()
	if ds.removed {
		return nil, nil, fmt.Errorf("watch document %s: %w", docID, ErrDocumentRemoved)
	}
	if _, ok := ds.atts[clientID]; !ok {
		return nil, nil, fmt.Errorf("watch document %s by %s: %w", docID, clientID, ErrDocumentNotAttached)
	}
	// Counted here, at the owner, where every watcher of the document is.
	sub, watchers, err := b.ps.SubscribeBounded(docID, clientID, p.MaxSubscribersPerDocument)
	if errors.Is(err, pubsub.ErrTooManyWatchers) {
		return nil, nil, fmt.Errorf("watch document %s: project allows %d watchers: %w",
			docID, p.MaxSubscribersPerDocument, ErrTooManySubscribers)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("watch document %s: %w", docID, err)
	}
	return sub, watchers, nil
}

// publishChanged tells the document's other watchers to pull.
func (b *Backend) publishChanged(docID, publisher string) {
	b.ps.Publish(docID, Event{Type: api.DocEventType_DOC_EVENT_TYPE_DOCUMENT_CHANGED, Publisher: publisher})
}
