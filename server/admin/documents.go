package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"unicode/utf8"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/document"
	"github.com/yorkie-affinity/yorkie/server/document/crdt"
	"github.com/yorkie-affinity/yorkie/server/yson"
)

// The AdminService's document calls act in the project whose secret key
// the call carries ("authorization: API-Key <secret key>", as upstream's
// dashboard and CLI send it). What they show of a document's current
// state comes from its owner's memory (Owners); its history comes from the
// database.

// Bounds of the document calls' pages, as upstream's.
const (
	// MaxDocumentPageSize bounds ListDocuments and SearchDocuments;
	// page_size 0 asks for this many.
	MaxDocumentPageSize = 101
	// MaxChangePageSize bounds ListChanges; page_size 0 asks for this
	// many.
	MaxChangePageSize = 1000
	// MaxGetDocuments bounds the keys of one GetDocuments.
	MaxGetDocuments = 100
	// RootMaxLen is how much of each root ListDocuments shows, as
	// upstream's.
	RootMaxLen = 50
)

// Error code names of the document calls, as upstream's.
const (
	codeDocumentNotFound      = "ErrDocumentNotFound"
	codeDocumentAlreadyExists = "ErrDocumentAlreadyExists"
)

// OwnerState is a document as its owner holds it now.
type OwnerState struct {
	// Summary has the owner's fields: root, size, presences, attached
	// clients.
	Summary *api.DocumentSummary
	// ServerSeq is the owner's head; GarbageLen its tombstones not
	// collected yet and SnapshotSeq its newest snapshot (0: none), both
	// only with the root.
	ServerSeq   int64
	GarbageLen  int
	SnapshotSeq int64
}

// Owners serves what the AdminService shows of documents and channels at
// the node that owns each (adminowner.Owners). Its errors are Connect errors
// with upstream's codes.
type Owners interface {
	// DocumentSummary returns the owner's root (and size) when root, the
	// attached clients' presences when presences, and the count of
	// attached clients.
	DocumentSummary(ctx context.Context, p *database.ProjectInfo, doc *database.DocInfo, root, presences bool) (*OwnerState, error)
	// RemoveDocument removes the document at its owner, refusing one with
	// clients attached unless force.
	RemoveDocument(ctx context.Context, p *database.ProjectInfo, doc *database.DocInfo, force bool) error
	// DocumentAt builds the stored document as of a past server_seq.
	DocumentAt(ctx context.Context, p *database.ProjectInfo, doc *database.DocInfo, seq int64) (*document.Document, error)
	// GetChannels counts channels at the owners of their groups.
	GetChannels(ctx context.Context, p *database.ProjectInfo, keys []string, includeSub bool) ([]*api.ChannelSummary, error)
	// ListChannels lists the project's channels with sessions.
	ListChannels(ctx context.Context, p *database.ProjectInfo, query string, limit int) ([]*api.ChannelSummary, error)
	// Broadcast hands a message to a channel's watchers at its owner.
	Broadcast(ctx context.Context, p *database.ProjectInfo, key, topic string, payload []byte) error
}

// docKeyPattern is the rule for document keys clients may use.
var docKeyPattern = regexp.MustCompile(`^[a-zA-Z0-9\-._~]{1,120}$`)

// idPattern is the form of document IDs.
var idPattern = regexp.MustCompile(`^[0-9a-f]{24}$`)

func validateDocumentKey(key string) error {
	if !docKeyPattern.MatchString(key) {
		return fmt.Errorf("document key %q: want 1 to 120 letters, digits or -._~", short(key))
	}
	return nil
}

// short cuts a value for an error message.
func short(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// keyProject returns the project whose secret key the call carries, through
// the shared authorization step.
func (s *Service) keyProject(ctx context.Context, h http.Header) (*database.ProjectInfo, error) {
	c, err := s.Authorize(ctx, h, NeedProjectKey())
	if err != nil {
		return nil, err
	}
	return c.Project, nil
}

// owners returns the owner side, or unavailable before the node serves.
func (s *Service) owners() (Owners, error) {
	if s.cfg.Owners == nil {
		return nil, newError(connect.CodeUnavailable, CodeUnavailable, errors.New("documents are not served by this node yet"))
	}
	return s.cfg.Owners, nil
}

// docError maps an error of a document call.
func (s *Service) docError(ctx context.Context, err error) error {
	var cerr *connect.Error
	switch {
	case errors.As(err, &cerr):
		return cerr
	case errors.Is(err, database.ErrDocumentNotFound):
		return newError(connect.CodeNotFound, codeDocumentNotFound, err)
	}
	return s.toConnect(ctx, err)
}

// liveDocument finds the project's live document with the key.
func (s *Service) liveDocument(ctx context.Context, p *database.ProjectInfo, key string) (*database.DocInfo, error) {
	if err := validateDocumentKey(key); err != nil {
		return nil, invalidArgument(err)
	}
	doc, err := s.db.FindDocumentByKey(ctx, p.ID, key)
	if err == nil && !doc.RemovedAt.IsZero() {
		err = fmt.Errorf("document %q was removed: %w", key, database.ErrDocumentNotFound)
	}
	if err != nil {
		return nil, s.docError(ctx, err)
	}
	return doc, nil
}

// summary fills a document's summary with its stored fields and what its
// owner shows.
func (s *Service) summary(ctx context.Context, o Owners, p *database.ProjectInfo, doc *database.DocInfo, root, presences bool) (*api.DocumentSummary, error) {
	st, err := o.DocumentSummary(ctx, p, doc, root, presences)
	if err != nil {
		return nil, s.docError(ctx, err)
	}
	sum := st.Summary
	sum.Id, sum.Key = doc.ID, doc.Key
	stamp(sum, doc)
	sum.SchemaKey = doc.Schema
	return sum, nil
}

// stamp sets a summary's times. Access and update times are not kept: they
// are the creation time, so that clients that read every timestamp (the
// dashboard does) get one.
func stamp(sum *api.DocumentSummary, doc *database.DocInfo) {
	sum.CreatedAt = timestamppb.New(doc.CreatedAt)
	sum.AccessedAt = sum.CreatedAt
	sum.UpdatedAt = sum.CreatedAt
}

// pageSize checks a request's page size against max; 0 asks for max.
func pageSize(n int32, max int) (int, error) {
	if n < 0 || int(n) > max {
		return 0, invalidArgument(fmt.Errorf("page_size %d: want 0 to %d", n, max))
	}
	if n == 0 {
		return max, nil
	}
	return int(n), nil
}

// CreateDocument creates a document, empty or with initial_root's members
// (a YSON object, as upstream). The root is stored by the document's owner
// as the document's first change, so the first client to attach pulls it.
// A malformed root is refused before anything is created.
func (s *Service) CreateDocument(ctx context.Context, req *connect.Request[api.CreateDocumentRequest]) (*connect.Response[api.CreateDocumentResponse], error) {
	p, err := s.keyProject(ctx, req.Header())
	if err != nil {
		return nil, err
	}
	if err := validateDocumentKey(req.Msg.DocumentKey); err != nil {
		return nil, invalidArgument(err)
	}
	root := strings.TrimSpace(req.Msg.InitialRoot)
	var up documentUpdater
	if root != "" {
		members, err := yson.ParseObject(root)
		if err != nil {
			return nil, invalidArgument(fmt.Errorf("initial_root: %w", err))
		}
		if len(members) == 0 {
			root = "" // an empty object adds nothing
		}
	}
	o, err := s.owners()
	if err != nil {
		return nil, err
	}
	if root != "" {
		var ok bool
		if up, ok = o.(documentUpdater); !ok {
			return nil, newError(connect.CodeUnimplemented, CodeUnimplemented, errors.New("this node does not update documents"))
		}
	}
	// A removed document's key may start a new one.
	old, err := s.db.FindDocumentByKey(ctx, p.ID, req.Msg.DocumentKey)
	switch {
	case err == nil && old.RemovedAt.IsZero():
		return nil, newError(connect.CodeAlreadyExists, codeDocumentAlreadyExists, fmt.Errorf("document %q already exists", req.Msg.DocumentKey))
	case err != nil && !errors.Is(err, database.ErrDocumentNotFound):
		return nil, s.docError(ctx, err)
	}
	doc, err := s.db.FindOrCreateDocument(ctx, p.ID, req.Msg.DocumentKey)
	if err != nil {
		return nil, s.docError(ctx, err)
	}
	if doc.ServerSeq != 0 {
		return nil, newError(connect.CodeAlreadyExists, codeDocumentAlreadyExists, fmt.Errorf("document %q already exists", req.Msg.DocumentKey))
	}
	if root != "" {
		if _, err := up.UpdateDocument(ctx, p, doc, DocumentUpdate{Root: root}); err != nil {
			return nil, s.docError(ctx, err)
		}
	}
	sum, err := s.summary(ctx, o, p, doc, true, false)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&api.CreateDocumentResponse{Document: sum}), nil
}

// ListDocuments lists a page of the project's live documents: newest first
// (descending ID) before previous_id, or oldest first after it when
// is_forward. include_root adds each one's root (its first RootMaxLen
// characters) and size from its owner.
func (s *Service) ListDocuments(ctx context.Context, req *connect.Request[api.ListDocumentsRequest]) (*connect.Response[api.ListDocumentsResponse], error) {
	p, err := s.keyProject(ctx, req.Header())
	if err != nil {
		return nil, err
	}
	size, err := pageSize(req.Msg.PageSize, MaxDocumentPageSize)
	if err != nil {
		return nil, err
	}
	if id := req.Msg.PreviousId; id != "" && !idPattern.MatchString(id) {
		return nil, invalidArgument(fmt.Errorf("previous_id %q: want a document ID (24 hex digits)", short(id)))
	}
	o, err := s.owners()
	if err != nil {
		return nil, err
	}
	docs, err := s.db.ListDocuments(ctx, p.ID, req.Msg.PreviousId, size, req.Msg.IsForward)
	if err != nil {
		return nil, s.docError(ctx, err)
	}
	res := &api.ListDocumentsResponse{Documents: make([]*api.DocumentSummary, 0, len(docs))}
	for _, doc := range docs {
		sum, err := s.summary(ctx, o, p, doc, req.Msg.IncludeRoot, false)
		if isNotFound(err) {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, err
		}
		if len(sum.Root) > RootMaxLen {
			cut := RootMaxLen
			for cut > 0 && !utf8.RuneStart(sum.Root[cut]) {
				cut--
			}
			sum.Root = sum.Root[:cut] + "..."
		}
		res.Documents = append(res.Documents, sum)
	}
	return connect.NewResponse(res), nil
}

// isNotFound reports whether err is a Connect not_found.
func isNotFound(err error) bool { return err != nil && connect.CodeOf(err) == connect.CodeNotFound }

// GetDocument returns a live document of the project with its owner's
// current root, size, presences and attached clients.
func (s *Service) GetDocument(ctx context.Context, req *connect.Request[api.GetDocumentRequest]) (*connect.Response[api.GetDocumentResponse], error) {
	p, err := s.keyProject(ctx, req.Header())
	if err != nil {
		return nil, err
	}
	doc, err := s.liveDocument(ctx, p, req.Msg.DocumentKey)
	if err != nil {
		return nil, err
	}
	o, err := s.owners()
	if err != nil {
		return nil, err
	}
	sum, err := s.summary(ctx, o, p, doc, true, true)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&api.GetDocumentResponse{Document: sum}), nil
}

// GetDocuments returns the project's live documents among the keys, in the
// keys' order; unknown keys are left out, as upstream does.
func (s *Service) GetDocuments(ctx context.Context, req *connect.Request[api.GetDocumentsRequest]) (*connect.Response[api.GetDocumentsResponse], error) {
	p, err := s.keyProject(ctx, req.Header())
	if err != nil {
		return nil, err
	}
	if n := len(req.Msg.DocumentKeys); n > MaxGetDocuments {
		return nil, invalidArgument(fmt.Errorf("%d document keys: want at most %d", n, MaxGetDocuments))
	}
	for _, k := range req.Msg.DocumentKeys {
		if err := validateDocumentKey(k); err != nil {
			return nil, invalidArgument(err)
		}
	}
	o, err := s.owners()
	if err != nil {
		return nil, err
	}
	res := &api.GetDocumentsResponse{}
	for _, k := range req.Msg.DocumentKeys {
		doc, err := s.liveDocument(ctx, p, k)
		if isNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		sum, err := s.summary(ctx, o, p, doc, req.Msg.IncludeRoot, req.Msg.IncludePresences)
		if isNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		res.Documents = append(res.Documents, sum)
	}
	return connect.NewResponse(res), nil
}

// SearchDocuments returns, in key order, up to page_size of the project's
// live documents whose key starts with query, and how many match in all.
func (s *Service) SearchDocuments(ctx context.Context, req *connect.Request[api.SearchDocumentsRequest]) (*connect.Response[api.SearchDocumentsResponse], error) {
	p, err := s.keyProject(ctx, req.Header())
	if err != nil {
		return nil, err
	}
	size, err := pageSize(req.Msg.PageSize, MaxDocumentPageSize)
	if err != nil {
		return nil, err
	}
	if len(req.Msg.Query) > 120 {
		return nil, invalidArgument(fmt.Errorf("query of %d bytes: want at most 120", len(req.Msg.Query)))
	}
	docs, total, err := s.db.SearchDocuments(ctx, p.ID, req.Msg.Query, size)
	if err != nil {
		return nil, s.docError(ctx, err)
	}
	res := &api.SearchDocumentsResponse{TotalCount: int32(total), Documents: make([]*api.DocumentSummary, 0, len(docs))}
	for _, doc := range docs {
		sum := &api.DocumentSummary{Id: doc.ID, Key: doc.Key, SchemaKey: doc.Schema}
		stamp(sum, doc)
		res.Documents = append(res.Documents, sum)
	}
	return connect.NewResponse(res), nil
}

// RemoveDocumentByAdmin removes a live document at its owner. Without
// force, a document with clients attached is refused
// (failed_precondition, ErrDocumentAttached) and nothing changes; with it,
// the attached clients learn the removal on their next PushPull.
func (s *Service) RemoveDocumentByAdmin(ctx context.Context, req *connect.Request[api.RemoveDocumentByAdminRequest]) (*connect.Response[api.RemoveDocumentByAdminResponse], error) {
	p, err := s.keyProject(ctx, req.Header())
	if err != nil {
		return nil, err
	}
	doc, err := s.liveDocument(ctx, p, req.Msg.DocumentKey)
	if err != nil {
		return nil, err
	}
	o, err := s.owners()
	if err != nil {
		return nil, err
	}
	if err := o.RemoveDocument(ctx, p, doc, req.Msg.Force); err != nil {
		return nil, s.docError(ctx, err)
	}
	s.logger.InfoContext(ctx, "document removed by admin", "project", p.ID, "key", doc.Key, "force", req.Msg.Force)
	return connect.NewResponse(&api.RemoveDocumentByAdminResponse{}), nil
}

// GetSnapshotMeta returns the document as of server_seq (at most its
// head): its snapshot in the SDK's encoding, lamport and version vector.
func (s *Service) GetSnapshotMeta(ctx context.Context, req *connect.Request[api.GetSnapshotMetaRequest]) (*connect.Response[api.GetSnapshotMetaResponse], error) {
	p, err := s.keyProject(ctx, req.Header())
	if err != nil {
		return nil, err
	}
	doc, err := s.liveDocument(ctx, p, req.Msg.DocumentKey)
	if err != nil {
		return nil, err
	}
	if seq := req.Msg.ServerSeq; seq < 0 || seq > doc.ServerSeq {
		return nil, invalidArgument(fmt.Errorf("server_seq %d: want 0 to the head, %d", seq, doc.ServerSeq))
	}
	o, err := s.owners()
	if err != nil {
		return nil, err
	}
	d, err := o.DocumentAt(ctx, p, doc, req.Msg.ServerSeq)
	if err != nil {
		return nil, s.docError(ctx, err)
	}
	snap, err := d.Snapshot()
	if err != nil {
		return nil, s.toConnect(ctx, err)
	}
	vv := d.VersionVector()
	return connect.NewResponse(&api.GetSnapshotMetaResponse{
		Snapshot:      snap,
		Lamport:       vv[crdt.InitialActorID],
		VersionVector: document.VersionVectorToPB(vv),
	}), nil
}

// ListChanges returns a page of a document's stored changes, as upstream
// pages them: the newest page_size before previous_seq (or the head), or
// with is_forward the oldest after it.
func (s *Service) ListChanges(ctx context.Context, req *connect.Request[api.ListChangesRequest]) (*connect.Response[api.ListChangesResponse], error) {
	p, err := s.keyProject(ctx, req.Header())
	if err != nil {
		return nil, err
	}
	size, err := pageSize(req.Msg.PageSize, MaxChangePageSize)
	if err != nil {
		return nil, err
	}
	if req.Msg.PreviousSeq < 0 {
		return nil, invalidArgument(fmt.Errorf("previous_seq %d: want 0 or more", req.Msg.PreviousSeq))
	}
	doc, err := s.liveDocument(ctx, p, req.Msg.DocumentKey)
	if err != nil {
		return nil, err
	}
	from, to := changesRange(req.Msg.PreviousSeq, int64(size), req.Msg.IsForward, doc.ServerSeq)
	res := &api.ListChangesResponse{}
	if from > to {
		return connect.NewResponse(res), nil
	}
	changes, err := s.db.FindChanges(ctx, doc.ID, from, to)
	if err != nil {
		return nil, s.docError(ctx, err)
	}
	for _, c := range changes {
		res.Changes = append(res.Changes, c.Body)
	}
	return connect.NewResponse(res), nil
}

// changesRange is the server_seq range of a ListChanges page.
func changesRange(prev, size int64, forward bool, head int64) (from, to int64) {
	if forward {
		if prev >= head {
			return head + 1, head
		}
		return prev + 1, min(prev+size, head)
	}
	end := head
	if prev > 0 && prev < head {
		end = prev - 1
	}
	return max(end-size+1, 1), end
}
