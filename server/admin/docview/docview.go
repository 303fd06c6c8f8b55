// Package docview serves operators' read-only view of a document on the
// profiling port, until the AdminService (package admin) takes it over. The
// view is rebuilt from the database (the newest snapshot and the changes
// stored after it), not taken from an owner's memory, so every node of a
// cluster answers the same for the same stored log.
package docview

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/document"
)

// DocumentsPath is the prefix of the document view: GET DocumentsPath + key,
// with an optional ProjectParam.
const DocumentsPath = "/admin/documents/"

// ProjectParam is the query parameter naming the document's project, by ID
// or by the name one of the admin user's projects has; without it the view
// reads the default project.
const ProjectParam = "project"

// DefaultPageSize is how many stored changes one read fetches while a view is
// rebuilt, which bounds the memory of a rebuild whatever the log's length.
const DefaultPageSize = 1000

// DefaultTimeout bounds one request's database reads.
const DefaultTimeout = 30 * time.Second

// maxKeyLength is the longest document key clients may use (see the rpc
// package's validation, whose rule this repeats).
const maxKeyLength = 120

// Sentinel errors of Document, which callers test with errors.Is.
var (
	// ErrInvalidDocumentKey: the key is not one a client could have used.
	ErrInvalidDocumentKey = errors.New("invalid document key")
	// ErrUnreadable: the stored snapshot or changes do not rebuild a document.
	ErrUnreadable = errors.New("stored document does not rebuild")
	// ErrProjectNotFound: the project parameter names no project.
	ErrProjectNotFound = errors.New("project not found")
)

// Config is what a Handler needs.
type Config struct {
	// DB is where documents are read from; required.
	DB database.Database
	// Logger receives the failures answered with 5xx (default slog.Default()).
	Logger *slog.Logger
	// Registerer receives the handler's metrics (none when nil).
	Registerer prometheus.Registerer
	// PageSize is DefaultPageSize when not positive.
	PageSize int
	// Timeout is DefaultTimeout when not positive.
	Timeout time.Duration
	// AdminUser is the account whose projects ProjectParam may name by
	// name (the server's default admin account, owner of the default
	// project); others' projects are named by ID.
	AdminUser string
}

// Handler serves the document view.
type Handler struct {
	db       database.Database
	log      *slog.Logger
	pageSize int64
	timeout  time.Duration
	admin    string
	// views counts document views by outcome: ok or the error code.
	views *prometheus.CounterVec
}

// New returns a Handler reading from cfg.DB.
func New(cfg Config) (*Handler, error) {
	if cfg.DB == nil {
		return nil, errors.New("docview: a database is required")
	}
	h := &Handler{
		db: cfg.DB, log: cfg.Logger, pageSize: int64(cfg.PageSize), timeout: cfg.Timeout, admin: cfg.AdminUser,
		views: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "yorkie_admin_document_views_total",
			Help: "Document views served on the profiling port, by outcome (ok or the error code).",
		}, []string{"outcome"}),
	}
	if cfg.Registerer != nil {
		if err := cfg.Registerer.Register(h.views); err != nil {
			return nil, fmt.Errorf("docview: register metrics: %w", err)
		}
	}
	if h.log == nil {
		h.log = slog.Default()
	}
	if h.pageSize <= 0 {
		h.pageSize = DefaultPageSize
	}
	if h.timeout <= 0 {
		h.timeout = DefaultTimeout
	}
	return h, nil
}

// Register adds the view to mux, at DocumentsPath.
func (h *Handler) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET "+DocumentsPath+"{key}", h.serveDocument)
}

// Size is a document's size as the SDK's getDocSize counts it.
type Size struct {
	Live DataSize `json:"live"`
	GC   DataSize `json:"gc"`
}

// DataSize is content (data) and bookkeeping (meta) bytes.
type DataSize struct {
	Data int `json:"data"`
	Meta int `json:"meta"`
}

// SnapshotInfo says which stored snapshot a view started from.
type SnapshotInfo struct {
	ServerSeq int64     `json:"server_seq"`
	CreatedAt time.Time `json:"created_at"`
}

// DocumentView is what operators see of a document.
type DocumentView struct {
	Key       string `json:"key"`
	ID        string `json:"id"`
	ProjectID string `json:"project_id"`
	// ServerSeq is the last stored change the view includes.
	ServerSeq int64 `json:"server_seq"`
	Removed   bool  `json:"removed"`
	Size      Size  `json:"size"`
	// GarbageLen counts the tombstones of the stored state: those the owner
	// has collected since its last snapshot still count here.
	GarbageLen int `json:"garbage_len"`
	// Snapshot is the newest stored snapshot, nil when the document has none.
	Snapshot *SnapshotInfo `json:"snapshot"`
	// Root is the document as the SDK's toSortedJSON writes it.
	Root json.RawMessage `json:"root"`
}

// Document rebuilds the view of the project's document with the key: the
// live one, or the newest removed one when none is live. It wraps
// ErrInvalidDocumentKey, database.ErrDocumentNotFound, database.ErrUnavailable
// or ErrUnreadable.
func (h *Handler) Document(ctx context.Context, projectID, key string) (*DocumentView, error) {
	if err := validateKey(key); err != nil {
		return nil, err
	}
	// The database's error names the key already.
	info, err := h.db.FindDocumentByKey(ctx, projectID, key)
	if err != nil {
		return nil, err
	}
	// The log is append-only, so the head read above bounds a consistent
	// prefix: the snapshot and changes read next describe exactly it.
	head := info.ServerSeq
	var (
		doc  *document.Document
		snap *SnapshotInfo
		from int64 = 1
	)
	s, err := h.db.FindSnapshot(ctx, info.ID, head)
	switch {
	case err == nil:
		vv, err := document.VersionVectorFromPB(&api.VersionVector{Vector: s.VersionVector})
		if err != nil {
			return nil, fmt.Errorf("document %q: snapshot at %d: vector: %w: %w", key, s.ServerSeq, ErrUnreadable, err)
		}
		if doc, err = document.FromSnapshotAt(s.Data, vv); err != nil {
			return nil, fmt.Errorf("document %q: snapshot at %d: %w: %w", key, s.ServerSeq, ErrUnreadable, err)
		}
		snap = &SnapshotInfo{ServerSeq: s.ServerSeq, CreatedAt: s.CreatedAt.UTC()}
		from = s.ServerSeq + 1
	case errors.Is(err, database.ErrSnapshotNotFound):
		doc = document.New()
	default:
		return nil, fmt.Errorf("document %q: %w", key, err)
	}
	for from <= head {
		to := min(from+h.pageSize-1, head)
		changes, err := h.db.FindChanges(ctx, info.ID, from, to)
		if err != nil {
			return nil, fmt.Errorf("document %q: %w", key, err)
		}
		if int64(len(changes)) != to-from+1 {
			return nil, fmt.Errorf("document %q: changes %d to %d: got %d: %w", key, from, to, len(changes), ErrUnreadable)
		}
		bodies := make([]*api.Change, len(changes))
		for i, c := range changes {
			bodies[i] = c.Body
		}
		if err := doc.ApplyChanges(bodies); err != nil {
			return nil, fmt.Errorf("document %q: changes from %d: %w: %w", key, from, ErrUnreadable, err)
		}
		from = to + 1
	}
	size := doc.Size()
	return &DocumentView{
		Key:        info.Key,
		ID:         info.ID,
		ProjectID:  info.ProjectID,
		ServerSeq:  head,
		Removed:    !info.RemovedAt.IsZero(),
		Size:       Size{Live: DataSize(size.Live), GC: DataSize(size.GC)},
		GarbageLen: doc.GarbageLen(),
		Snapshot:   snap,
		Root:       json.RawMessage(doc.JSON()),
	}, nil
}

// errorBody is the JSON of a refused request.
type errorBody struct {
	Error string `json:"error"`
	// Code is what a program tests: invalid_key, project_not_found,
	// document_not_found, unavailable, document_unreadable or internal.
	Code string `json:"code"`
}

func (h *Handler) serveDocument(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), h.timeout)
	defer cancel()
	key := r.PathValue("key")
	projectID, err := h.projectID(ctx, r.URL.Query().Get(ProjectParam))
	var view *DocumentView
	if err == nil {
		view, err = h.Document(ctx, projectID, key)
	}
	if err != nil {
		status, code := http.StatusInternalServerError, "internal"
		switch {
		case errors.Is(err, ErrInvalidDocumentKey):
			status, code = http.StatusBadRequest, "invalid_key"
		case errors.Is(err, ErrProjectNotFound):
			status, code = http.StatusNotFound, "project_not_found"
		case errors.Is(err, database.ErrDocumentNotFound):
			status, code = http.StatusNotFound, "document_not_found"
		case errors.Is(err, database.ErrUnavailable):
			status, code = http.StatusServiceUnavailable, "unavailable"
		case errors.Is(err, ErrUnreadable):
			code = "document_unreadable"
		}
		if status >= 500 {
			h.log.Error("document view failed", "key", key, "error", err)
		}
		h.views.WithLabelValues(code).Inc()
		writeJSON(w, status, errorBody{Error: err.Error(), Code: code})
		return
	}
	h.views.WithLabelValues("ok").Inc()
	writeJSON(w, http.StatusOK, view)
}

// projectID resolves the project parameter: empty is the default project,
// then an ID, then a name among the admin user's projects.
func (h *Handler) projectID(ctx context.Context, param string) (string, error) {
	if param == "" {
		return database.DefaultProjectID, nil
	}
	p, err := h.db.FindProjectByID(ctx, param)
	if errors.Is(err, database.ErrProjectNotFound) && h.admin != "" {
		var u *database.UserInfo
		if u, err = h.db.FindUserByName(ctx, h.admin); err == nil {
			p, err = h.db.FindProjectByName(ctx, u.ID, param)
		}
	}
	switch {
	case errors.Is(err, database.ErrProjectNotFound), errors.Is(err, database.ErrUserNotFound):
		return "", fmt.Errorf("%w: %q", ErrProjectNotFound, truncate(param))
	case err != nil:
		return "", fmt.Errorf("project %q: %w", truncate(param), err)
	}
	return p.ID, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	// The root is shown as the SDK writes it, "<", ">" and "&" included.
	enc.SetEscapeHTML(false)
	// A write error means the operator went away; there is no one to tell.
	_ = enc.Encode(v)
}

// validateKey accepts what clients may use as a document key: 1 to 120
// letters, digits and "-._~".
func validateKey(key string) error {
	ok := key != "" && len(key) <= maxKeyLength
	for i := 0; ok && i < len(key); i++ {
		c := key[i]
		ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '-' || c == '.' || c == '_' || c == '~'
	}
	if !ok {
		return fmt.Errorf("%w %q: want 1 to %d characters among letters, digits and \"-._~\"", ErrInvalidDocumentKey, truncate(key), maxKeyLength)
	}
	return nil
}

func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}
