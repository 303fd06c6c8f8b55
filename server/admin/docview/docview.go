// Package docview serves the operators' view of a document on the
// profiling port: a thin HTTP client of the AdminService's document logic
// (package admin), with its credentials and the owner's current state, so
// a view costs what a GetDocument costs and is never a rebuild.
package docview

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"connectrpc.com/connect"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/yorkie-affinity/yorkie/server/rpc/errinfo"
)

// DocumentsPath is the prefix of the document view: GET DocumentsPath + key,
// with an optional ProjectParam.
const DocumentsPath = "/admin/documents/"

// ProjectParam is the query parameter naming the document's project, by ID
// or by name (for an admin token); without it the view reads the default
// project, or the project of the secret key the request carries.
const ProjectParam = "project"

// DefaultTimeout bounds one request.
const DefaultTimeout = 30 * time.Second

// Source finds the view of a document for a request's credentials. Its
// errors are Connect errors with Yorkie's codes (admin.Service).
type Source interface {
	DocumentView(ctx context.Context, h http.Header, project, key string) (*DocumentView, error)
}

// Config is what a Handler needs.
type Config struct {
	// Source answers the views; required.
	Source Source
	// Logger receives the failures answered with 5xx (default slog.Default()).
	Logger *slog.Logger
	// Registerer receives the handler's metrics (none when nil).
	Registerer prometheus.Registerer
	// Timeout is DefaultTimeout when not positive.
	Timeout time.Duration
}

// Handler serves the document view.
type Handler struct {
	src     Source
	log     *slog.Logger
	timeout time.Duration
	// views counts document views by outcome: ok or the error code.
	views *prometheus.CounterVec
}

// New returns a Handler asking cfg.Source.
func New(cfg Config) (*Handler, error) {
	if cfg.Source == nil {
		return nil, errors.New("docview: a source is required")
	}
	h := &Handler{
		src: cfg.Source, log: cfg.Logger, timeout: cfg.Timeout,
		views: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "yorkie_admin_document_views_total",
			Help: "Document views served on the profiling port, by outcome (ok or the error code).",
		}, []string{"outcome"}),
	}
	if cfg.Registerer != nil {
		if err := cfg.Registerer.Register(h.views); err != nil {
			return nil, errors.Join(errors.New("docview: register metrics"), err)
		}
	}
	if h.log == nil {
		h.log = slog.Default()
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

// SnapshotInfo names the owner's newest snapshot (stored or being stored).
type SnapshotInfo struct {
	ServerSeq int64 `json:"server_seq"`
}

// DocumentView is what operators see of a live document: its owner's
// current state.
type DocumentView struct {
	Key       string `json:"key"`
	ID        string `json:"id"`
	ProjectID string `json:"project_id"`
	// ServerSeq is the owner's head.
	ServerSeq int64 `json:"server_seq"`
	// Removed is always false: removed documents are not shown.
	Removed bool `json:"removed"`
	Size    Size `json:"size"`
	// GarbageLen counts the owner's tombstones not collected yet.
	GarbageLen int `json:"garbage_len"`
	// Snapshot is the newest snapshot, nil when the document has none.
	Snapshot *SnapshotInfo `json:"snapshot"`
	// Root is the document as the SDK's toSortedJSON writes it.
	Root json.RawMessage `json:"root"`
}

// errorBody is the JSON of a refused request.
type errorBody struct {
	Error string `json:"error"`
	// Code is what a program tests: unauthenticated, permission_denied,
	// invalid_key, project_not_found, document_not_found, unavailable or
	// internal.
	Code string `json:"code"`
}

func (h *Handler) serveDocument(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), h.timeout)
	defer cancel()
	key := r.PathValue("key")
	view, err := h.src.DocumentView(ctx, r.Header, r.URL.Query().Get(ProjectParam), key)
	if err != nil {
		status, code := refusal(err)
		if status >= 500 {
			h.log.Error("document view failed", "key", key, "error", err)
		}
		h.views.WithLabelValues(code).Inc()
		if status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="yorkie"`)
		}
		writeJSON(w, status, errorBody{Error: connect.CodeOf(err).String() + ": " + message(err), Code: code})
		return
	}
	h.views.WithLabelValues("ok").Inc()
	writeJSON(w, http.StatusOK, view)
}

// refusal maps a Connect error to the view's status and code.
func refusal(err error) (int, string) {
	switch connect.CodeOf(err) {
	case connect.CodeUnauthenticated:
		return http.StatusUnauthorized, "unauthenticated"
	case connect.CodePermissionDenied:
		return http.StatusForbidden, "permission_denied"
	case connect.CodeInvalidArgument:
		return http.StatusBadRequest, "invalid_key"
	case connect.CodeNotFound:
		if errinfo.Metadata(err)["code"] == errinfo.CodeProjectNotFound {
			return http.StatusNotFound, "project_not_found"
		}
		return http.StatusNotFound, "document_not_found"
	case connect.CodeUnavailable, connect.CodeDeadlineExceeded:
		return http.StatusServiceUnavailable, "unavailable"
	}
	return http.StatusInternalServerError, "internal"
}

// message is the error's own message, without the Connect code.
func message(err error) string {
	var ce *connect.Error
	if errors.As(err, &ce) {
		return ce.Message()
	}
	return err.Error()
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
