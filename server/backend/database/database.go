// Package database defines where a Yorkie server keeps clients, documents,
// attachments and the change log, and what every implementation must guarantee.
//
// Implementations have no multi-document transactions (MongoDB-wire servers such
// as FerretDB lack them, and concurrent read-modify-write updates there may lose
// updates). Two rules therefore carry correctness:
//
//   - The change log is arbitrated by an insert-or-fail unique key on
//     (document, server_seq). AppendChanges stores a whole batch or nothing and
//     reports ErrConflict when any of its server_seq values is taken, so two
//     writers that both believe they own a document can never interleave or
//     overwrite each other: the loser learns it and reloads.
//   - Document state written by an owner carries the owner's epoch (a fencing
//     token from the session store). A write with an epoch lower than the
//     highest one that claimed the document is refused with ErrFenced.
//
// Every call takes a context first and honours its deadline. When the backing
// server cannot be reached, calls fail with an error wrapping ErrUnavailable.
package database

import (
	"context"
	"errors"
	"time"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/fault"
)

// Sentinel errors that callers test with errors.Is. They are the server's only
// sentinels for an unknown client or document: the backend passes them on.
// ErrConflict, ErrFenced and ErrUnavailable are retryable (fault.IsRetryable).
var (
	// ErrClientNotFound: no client has the given ID.
	ErrClientNotFound = errors.New("client not found")
	// ErrDocumentNotFound: no document has the given ID or key.
	ErrDocumentNotFound = errors.New("document not found")
	// ErrAttachmentNotFound: the client never attached the document.
	ErrAttachmentNotFound = errors.New("attachment not found")
	// ErrConflict: another writer stored a change with one of the server_seq
	// values of the batch. Nothing of the batch was stored; reload and retry.
	ErrConflict = fault.NewRetryable("change log conflict")
	// ErrFenced: a newer owner (higher epoch) has claimed the document; the
	// caller has lost ownership and must stop writing it.
	ErrFenced = fault.NewRetryable("fenced by a newer owner epoch")
	// ErrUnavailable: the database cannot be reached or did not answer in time.
	ErrUnavailable = fault.NewRetryable("database unavailable")
)

// ClientStatus says whether a client may use documents.
type ClientStatus string

// Client statuses.
const (
	ClientActivated   ClientStatus = "activated"
	ClientDeactivated ClientStatus = "deactivated"
)

// ClientInfo is a client as the database keeps it.
type ClientInfo struct {
	// ID is the client's actor ID: 24 lowercase hex characters, unique
	// among every project's clients.
	ID string
	// ProjectID is the project the client was activated in; the client is
	// found through no other.
	ProjectID string
	Key       string
	Metadata  map[string]string
	Status    ClientStatus
	CreatedAt time.Time
	// UpdatedAt is the client's last recorded activity: its activation,
	// deactivation or a later TouchClients.
	UpdatedAt time.Time
}

// DocInfo is a document's metadata. The change log, not ServerSeq, is the truth
// about the head: ServerSeq is the highest server_seq the database has seen
// appended, recomputed from the log by ClaimDocument.
type DocInfo struct {
	// ID is opaque to clients: 24 lowercase hex characters, unique among
	// every project's documents.
	ID string
	// ProjectID is the project the document belongs to; its key is unique
	// among that project's live documents only.
	ProjectID string
	Key       string
	// ServerSeq is the server_seq of the last change in the log (0 if empty).
	ServerSeq int64
	// Epoch is the highest owner epoch that claimed the document (0: never).
	Epoch int64
	// DocEpoch is upstream's document epoch: it counts the compactions of
	// the document. Not to be confused with Epoch, the owner's fencing token.
	DocEpoch int64
	// CompactedSeq is the server_seq of the change the last compaction
	// stored, the first of the log since (0: never compacted).
	CompactedSeq int64
	// RemovedAt is zero while the document is live.
	RemovedAt time.Time
	CreatedAt time.Time
	// Schema is the key ("<name>@<version>") of the schema the document is
	// bound to, "" for none.
	Schema string
}

// AttachmentStatus is the state of one client's attachment to one document.
type AttachmentStatus string

// Attachment statuses.
const (
	Attached AttachmentStatus = "attached"
	Detached AttachmentStatus = "detached"
	Removed  AttachmentStatus = "removed"
)

// Attachment is one client's view of one document: its checkpoint and the
// version vector it last reported, used for the minimum synced version vector.
type Attachment struct {
	ClientID string
	DocID    string
	Status   AttachmentStatus
	// ServerSeq is the last server_seq the client has been sent.
	ServerSeq int64
	// ClientSeq is the last client_seq of the client's changes stored in the
	// log since AttachedAt.
	ClientSeq uint32
	// AttachedAt is the document head when this attachment began; the
	// client's changes of this attachment all have a greater server_seq.
	AttachedAt int64
	// VersionVector is the client's last reported document version vector
	// (wire form: standard base64 of the actor ID bytes -> lamport).
	VersionVector map[string]int64
	// DocEpoch is the document's DocEpoch when the attachment began: a
	// client attached before a compaction cannot sync with the new history.
	DocEpoch  int64
	UpdatedAt time.Time
}

// Change is one stored change. Body holds the change as the client sent it,
// with Body.Id.ServerSeq set to ServerSeq; it must not be mutated once stored,
// since implementations may hand the same value to many readers.
type Change struct {
	ServerSeq int64
	// ActorID is the pushing client's ID (lowercase hex).
	ActorID   string
	ClientSeq uint32
	Body      *api.Change
}

// Database stores everything a Yorkie server persists.
//
// Clients and documents belong to projects. The calls that find them by key
// or by ID take the project and treat a client or document of another
// project as absent, so one project can never reach another's data, even
// with its IDs. Attachments, changes and snapshots are reached through a
// document's (and client's) ID once the caller found it in its project.
// Records stored before projects existed belong to DefaultProjectID.
type Database interface {
	// ActivateClient creates a new activated client of the project with the
	// key. Every call creates one, even for a key used before, with an ID
	// (see ClientIDs) greater than the IDs handed out before it.
	ActivateClient(ctx context.Context, projectID, key string, metadata map[string]string) (*ClientInfo, error)
	// DeactivateClient marks the project's client deactivated.
	// ErrClientNotFound if the project has no such client.
	DeactivateClient(ctx context.Context, projectID, clientID string) (*ClientInfo, error)
	// FindClient returns the project's client or ErrClientNotFound.
	FindClient(ctx context.Context, projectID, clientID string) (*ClientInfo, error)
	// TouchClients records at as the last activity (UpdatedAt) of those of
	// the clients that are activated and have an earlier one recorded;
	// unknown IDs are skipped. A touch lost to a race only makes a client
	// look idle for longer, never active when it is not.
	TouchClients(ctx context.Context, clientIDs []string, at time.Time) error
	// FindInactiveClients returns, in ID order, up to limit activated
	// clients with an ID above afterID ("" for the first) whose UpdatedAt is
	// before before: the candidates for deactivation by housekeeping.
	FindInactiveClients(ctx context.Context, before time.Time, afterID string, limit int) ([]*ClientInfo, error)

	// FindOrCreateDocument returns the project's live document with the
	// key, creating it if there is none (a removed document's key starts a
	// new document).
	FindOrCreateDocument(ctx context.Context, projectID, key string) (*DocInfo, error)
	// FindDocument returns the project's document or ErrDocumentNotFound.
	FindDocument(ctx context.Context, projectID, docID string) (*DocInfo, error)
	// FindDocumentByKey returns the project's live document with the key
	// or, when none is live, the newest removed one; ErrDocumentNotFound if
	// the key never named a document of the project. It creates nothing:
	// operators read documents with it.
	FindDocumentByKey(ctx context.Context, projectID, key string) (*DocInfo, error)
	// ClaimDocument records epoch as the document's owner epoch unless a higher
	// one is recorded (then ErrFenced), and returns the document with ServerSeq
	// recomputed from the change log. An owner calls it before serving a
	// document it did not serve before. Epoch 0 claims nothing (single node).
	ClaimDocument(ctx context.Context, docID string, epoch int64) (*DocInfo, error)
	// RemoveDocument marks the document removed (ErrFenced as ClaimDocument).
	RemoveDocument(ctx context.Context, docID string, epoch int64) error

	// FindAttachment returns the client's attachment to the document, or
	// ErrAttachmentNotFound.
	FindAttachment(ctx context.Context, clientID, docID string) (*Attachment, error)
	// ListAttachments returns the attachments of a document with status Attached.
	ListAttachments(ctx context.Context, docID string) ([]*Attachment, error)
	// ListDocumentClients returns the IDs of every client that ever attached
	// the document, whatever its attachment's status.
	ListDocumentClients(ctx context.Context, docID string) ([]string, error)
	// ListClientAttachments returns the attachments of a client with status Attached.
	ListClientAttachments(ctx context.Context, clientID string) ([]*Attachment, error)
	// CountClientAttachments returns how many documents the client has
	// attached; its cost follows that number, not the client's history.
	CountClientAttachments(ctx context.Context, clientID string) (int, error)
	// UpdateAttachment creates or replaces the attachment keyed by
	// (ClientID, DocID). ErrFenced as ClaimDocument.
	UpdateAttachment(ctx context.Context, a *Attachment, epoch int64) error

	// AppendChanges stores the batch, whose ServerSeq values must be consecutive
	// and start right after the current head. All or nothing: ErrConflict if
	// any server_seq is taken, ErrFenced if a higher epoch claimed the document.
	AppendChanges(ctx context.Context, docID string, epoch int64, changes []*Change) error
	// FindChanges returns the changes with from <= server_seq <= to, in order.
	FindChanges(ctx context.Context, docID string, from, to int64) ([]*Change, error)
	// LastClientSeq returns the highest client_seq the actor stored in the
	// document's log with server_seq > after (0 if none). A new owner uses it to
	// reconcile an attachment whose checkpoint update was lost in a crash.
	LastClientSeq(ctx context.Context, docID, actorID string, after int64) (uint32, error)

	// SaveSnapshot stores s as the document's state right after its change
	// s.ServerSeq, which must lie between 1 and the head of the log.
	// ErrDocumentNotFound for an unknown document, ErrFenced as AppendChanges.
	// A snapshot is a function of the log up to its server_seq, so the first
	// one stored for a server_seq stays: a later save for it stores nothing
	// and returns nil. Readers see a snapshot whole or not at all. Once it is
	// visible, the document's snapshots older than its SnapshotsKept newest
	// are deleted. The database keeps its own copy of s and sets CreatedAt.
	// RemoveDocument keeps a document's snapshots, as it keeps its log.
	SaveSnapshot(ctx context.Context, docID string, epoch int64, s *Snapshot) error
	// FindSnapshot returns the document's newest snapshot with
	// ServerSeq <= atOrBefore, or ErrSnapshotNotFound when it has none (an
	// unknown document has none). The result is the caller's. A document is
	// rebuilt from it and FindChanges(ServerSeq+1, head). A stored snapshot
	// that cannot be read back whole is passed over for an older one, and
	// logged: the log, not a snapshot, is the truth.
	FindSnapshot(ctx context.Context, docID string, atOrBefore int64) (*Snapshot, error)

	// Close releases the database's resources.
	Close(ctx context.Context) error

	// Accounts: the admin API's users and projects.
	Accounts
	// Revisions: documents' named copies of their content.
	Revisions
	// Compaction: replacing a document's history with one change.
	Compaction
	// Schemas: the projects' document schemas.
	Schemas
	// AccountChanges: password changes, account removal, key rotation.
	AccountChanges
	// Members: project memberships and invites.
	Members
	// Stats: what the admin API reports of a project's use.
	Stats
	// DocumentListing: the admin API's document lists.
	DocumentListing
	// Strikes: attempt counts of the admin API's throttles.
	Strikes
}

// ErrSnapshotNotFound: the document has no stored snapshot at or before the
// asked server_seq.
var ErrSnapshotNotFound = errors.New("snapshot not found")

// SnapshotsKept is how many of a document's newest snapshots every
// implementation keeps. More than one, so that a reader that found the
// newest just before a save still finds it while reading.
const SnapshotsKept = 2

// Snapshot is a document's state as of one server_seq: what a rebuild starts
// from instead of replaying the whole change log.
type Snapshot struct {
	// ServerSeq is the last change of the log the state includes.
	ServerSeq int64
	// Lamport is the document's lamport clock after that change.
	Lamport int64
	// VersionVector is the document's version vector after that change
	// (wire form as Attachment.VersionVector).
	VersionVector map[string]int64
	// Data is the binary yorkie.v1.Snapshot (root element and presences),
	// uncompressed; implementations compress it at rest.
	Data []byte
	// CreatedAt is when the snapshot was stored.
	CreatedAt time.Time
}

// Sentinel errors of accounts, projects and secrets.
var (
	// ErrUserNotFound: no user has the given name.
	ErrUserNotFound = errors.New("user not found")
	// ErrUserAlreadyExists: a user with the name exists already.
	ErrUserAlreadyExists = errors.New("user already exists")
	// ErrProjectNotFound: no project of the owner has the given ID or name,
	// or no project has the given key.
	ErrProjectNotFound = errors.New("project not found")
	// ErrProjectAlreadyExists: the owner has a project with the name already.
	ErrProjectAlreadyExists = errors.New("project already exists")
)

// UserInfo is an account of the admin API.
type UserInfo struct {
	// ID is 24 lowercase hex characters.
	ID       string
	Username string
	// HashedPassword is the password as the caller hashed it; the database
	// never sees the password itself.
	HashedPassword string
	// AuthProvider is "" for an account with a password, "github" for one
	// made by a GitHub log-in (it has no password).
	AuthProvider string
	CreatedAt    time.Time
}

// The default project serves clients sending no API key. Its ID is fixed, as
// upstream's is, so every node (and data stored before projects existed)
// names the same project.
const (
	DefaultProjectName = "default"
	DefaultProjectID   = "000000000000000000000000"
)

// ProjectInfo is a tenant: its keys, webhook settings and limits.
type ProjectInfo struct {
	// ID is 24 lowercase hex characters.
	ID string
	// Name is unique among the projects of one owner.
	Name string
	// Owner is the ID of the user who created the project.
	Owner string
	// PublicKey picks the project in the x-api-key header of SDK calls;
	// SecretKey authenticates server-side calls and signs event webhooks.
	// Both are random and unique among all projects.
	PublicKey string
	SecretKey string

	AuthWebhookURL     string
	AuthWebhookMethods []string
	EventWebhookURL    string
	EventWebhookEvents []string
	// Webhook call settings of the project; zero values and empty
	// durations mean the server's flags. Durations are Go durations ("3s").
	AuthWebhook  WebhookSettings
	EventWebhook WebhookSettings

	// ClientDeactivateThreshold is a Go duration ("24h"); empty means the
	// server's flag.
	ClientDeactivateThreshold string
	// MaxSubscribersPerDocument, MaxAttachmentsPerDocument and
	// MaxSizePerDocument bound a document of the project; 0 is no bound.
	MaxSubscribersPerDocument int
	MaxAttachmentsPerDocument int
	MaxSizePerDocument        int
	// RemoveOnDetach removes a document once its last client detaches.
	RemoveOnDetach bool
	// AutoRevisionEnabled stores a revision of a document at each of its
	// snapshots (on by default, as upstream).
	AutoRevisionEnabled bool
	// SnapshotThreshold and SnapshotInterval are the project's snapshot
	// settings (0: the server's flags). ChannelSessionTTL is a Go duration
	// ("" : the server's flag).
	SnapshotThreshold int64
	SnapshotInterval  int64
	ChannelSessionTTL string
	// AllowedOrigins lists the web origins browsers may call YorkieService
	// from for this project ("*" any; empty: no check).
	AllowedOrigins []string

	CreatedAt time.Time
	UpdatedAt time.Time
}

// WebhookSettings are how a project's webhook is called: retries with a
// backoff between the wait intervals, and a timeout per request.
type WebhookSettings struct {
	MaxRetries      uint64
	MinWaitInterval string
	MaxWaitInterval string
	RequestTimeout  string
}

// WebhookUpdate lists the webhook settings UpdateProject changes: nil
// fields stay.
type WebhookUpdate struct {
	MaxRetries      *uint64
	MinWaitInterval *string
	MaxWaitInterval *string
	RequestTimeout  *string
}

func (u *WebhookUpdate) apply(w *WebhookSettings) {
	if u.MaxRetries != nil {
		w.MaxRetries = *u.MaxRetries
	}
	for _, f := range []struct{ dst, src *string }{
		{&w.MinWaitInterval, u.MinWaitInterval},
		{&w.MaxWaitInterval, u.MaxWaitInterval},
		{&w.RequestTimeout, u.RequestTimeout},
	} {
		if f.src != nil {
			*f.dst = *f.src
		}
	}
}

// ProjectUpdate lists the fields UpdateProject changes: nil fields stay.
type ProjectUpdate struct {
	Name                      *string
	AuthWebhookURL            *string
	AuthWebhookMethods        *[]string
	AuthWebhook               WebhookUpdate
	EventWebhookURL           *string
	EventWebhookEvents        *[]string
	EventWebhook              WebhookUpdate
	ClientDeactivateThreshold *string
	MaxSubscribersPerDocument *int
	MaxAttachmentsPerDocument *int
	MaxSizePerDocument        *int
	RemoveOnDetach            *bool
	AutoRevisionEnabled       *bool
	SnapshotThreshold         *int64
	SnapshotInterval          *int64
	ChannelSessionTTL         *string
	AllowedOrigins            *[]string
}

// Apply writes the set fields of u into p.
func (u *ProjectUpdate) Apply(p *ProjectInfo) {
	set := func(dst *string, src *string) {
		if src != nil {
			*dst = *src
		}
	}
	set(&p.Name, u.Name)
	set(&p.AuthWebhookURL, u.AuthWebhookURL)
	set(&p.EventWebhookURL, u.EventWebhookURL)
	set(&p.ClientDeactivateThreshold, u.ClientDeactivateThreshold)
	if u.AuthWebhookMethods != nil {
		p.AuthWebhookMethods = append([]string(nil), (*u.AuthWebhookMethods)...)
	}
	if u.EventWebhookEvents != nil {
		p.EventWebhookEvents = append([]string(nil), (*u.EventWebhookEvents)...)
	}
	for _, f := range []struct {
		dst *int
		src *int
	}{
		{&p.MaxSubscribersPerDocument, u.MaxSubscribersPerDocument},
		{&p.MaxAttachmentsPerDocument, u.MaxAttachmentsPerDocument},
		{&p.MaxSizePerDocument, u.MaxSizePerDocument},
	} {
		if f.src != nil {
			*f.dst = *f.src
		}
	}
	if u.RemoveOnDetach != nil {
		p.RemoveOnDetach = *u.RemoveOnDetach
	}
	if u.AutoRevisionEnabled != nil {
		p.AutoRevisionEnabled = *u.AutoRevisionEnabled
	}
	if u.SnapshotThreshold != nil {
		p.SnapshotThreshold = *u.SnapshotThreshold
	}
	if u.SnapshotInterval != nil {
		p.SnapshotInterval = *u.SnapshotInterval
	}
	set(&p.ChannelSessionTTL, u.ChannelSessionTTL)
	if u.AllowedOrigins != nil {
		p.AllowedOrigins = append([]string(nil), (*u.AllowedOrigins)...)
	}
	u.AuthWebhook.apply(&p.AuthWebhook)
	u.EventWebhook.apply(&p.EventWebhook)
}

// Accounts stores the users of the admin API, its projects and the
// server-wide secrets every node of a cluster must agree on. A Database
// implementation that serves the admin API implements it too.
type Accounts interface {
	// CreateUser stores a new user, or fails with ErrUserAlreadyExists.
	CreateUser(ctx context.Context, username, hashedPassword string) (*UserInfo, error)
	// FindUserByName returns the user or ErrUserNotFound.
	FindUserByName(ctx context.Context, username string) (*UserInfo, error)

	// CreateProject stores a new project of the owner with fresh keys and
	// no webhooks or limits, or fails with ErrProjectAlreadyExists.
	CreateProject(ctx context.Context, owner, name string) (*ProjectInfo, error)
	// EnsureDefaultProject returns the project with DefaultProjectID,
	// creating it (named DefaultProjectName, owned by owner) if it is
	// missing. Racing callers get the same project.
	EnsureDefaultProject(ctx context.Context, owner string) (*ProjectInfo, error)
	// ListProjects returns the owner's projects, oldest first.
	ListProjects(ctx context.Context, owner string) ([]*ProjectInfo, error)
	// FindProjectByName returns the owner's project or ErrProjectNotFound.
	FindProjectByName(ctx context.Context, owner, name string) (*ProjectInfo, error)
	// FindProjectByID returns the project or ErrProjectNotFound.
	FindProjectByID(ctx context.Context, id string) (*ProjectInfo, error)
	// FindProjectByPublicKey returns the project or ErrProjectNotFound.
	FindProjectByPublicKey(ctx context.Context, publicKey string) (*ProjectInfo, error)
	// FindProjectBySecretKey returns the project or ErrProjectNotFound.
	FindProjectBySecretKey(ctx context.Context, secretKey string) (*ProjectInfo, error)
	// UpdateProject changes the set fields of the owner's project and sets
	// UpdatedAt. ErrProjectNotFound if the owner has no project with the ID,
	// ErrProjectAlreadyExists if the new name is another project's.
	UpdateProject(ctx context.Context, owner, id string, u *ProjectUpdate) (*ProjectInfo, error)
	// ClientDeactivateThresholds returns the ClientDeactivateThreshold of
	// every project that sets one, by project ID, as stored (unparsed).
	// Housekeeping reads it once per run, so it reads nothing else of the
	// projects.
	ClientDeactivateThresholds(ctx context.Context) (map[string]string, error)

	// EnsureSecret returns the secret stored under name, storing candidate
	// first if there is none: the first node to start picks the value and
	// every other node gets the same.
	EnsureSecret(ctx context.Context, name, candidate string) (string, error)
}
