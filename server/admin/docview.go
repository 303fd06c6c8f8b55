package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/yorkie-affinity/yorkie/server/admin/docview"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// DocumentView is the operators' view of a document on the profiling port
// (package docview): the same authorization as the AdminService and the
// same owner's state as GetDocument, never a rebuild.
//
// Credentials: "authorization: API-Key <secret key>" names the project;
// an admin token ("Bearer", or the dashboard's session cookie) reads the
// project named by project (an ID or the name of one of the user's
// projects; empty: the default project) with any member role.
func (s *Service) DocumentView(ctx context.Context, h http.Header, project, key string) (*docview.DocumentView, error) {
	var need Need
	scheme, _, _ := strings.Cut(strings.TrimSpace(h.Get("Authorization")), " ")
	switch {
	case strings.EqualFold(scheme, "API-Key"):
		need = NeedProjectKey()
	case project == "":
		need = NeedProjectID(database.DefaultProjectID, database.RoleMember)
	case idPattern.MatchString(project):
		need = NeedProjectID(project, database.RoleMember)
	default:
		need = NeedProjectName(project, database.RoleMember)
	}
	c, err := s.Authorize(ctx, h, need)
	if err != nil && need.projectID != "" && project != "" && isNotFound(err) {
		// A name that looks like an ID.
		c, err = s.Authorize(ctx, h, NeedProjectName(project, database.RoleMember))
	}
	if err != nil {
		return nil, err
	}
	p := c.Project
	if need.key && project != "" && project != p.ID && project != p.Name {
		return nil, invalidArgument(fmt.Errorf("project %q is not the project of the secret key", short(project)))
	}
	doc, err := s.liveDocument(ctx, p, key)
	if err != nil {
		return nil, err
	}
	o, err := s.owners()
	if err != nil {
		return nil, err
	}
	st, err := o.DocumentSummary(ctx, p, doc, true, false)
	if err != nil {
		return nil, s.docError(ctx, err)
	}
	if st == nil || st.Summary == nil {
		return nil, s.toConnect(ctx, errors.New("the owner sent no summary"))
	}
	size := st.Summary.GetDocumentSize()
	view := &docview.DocumentView{
		Key: doc.Key, ID: doc.ID, ProjectID: p.ID, ServerSeq: st.ServerSeq,
		Size: docview.Size{
			Live: docview.DataSize{Data: int(size.GetLive().GetData()), Meta: int(size.GetLive().GetMeta())},
			GC:   docview.DataSize{Data: int(size.GetGc().GetData()), Meta: int(size.GetGc().GetMeta())},
		},
		GarbageLen: st.GarbageLen,
		Root:       json.RawMessage(st.Summary.GetRoot()),
	}
	if st.SnapshotSeq > 0 {
		view.Snapshot = &docview.SnapshotInfo{ServerSeq: st.SnapshotSeq}
	}
	return view, nil
}
