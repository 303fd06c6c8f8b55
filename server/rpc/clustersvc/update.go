package clustersvc

import (
	"context"

	"connectrpc.com/connect"

	clusterv1 "github.com/yorkie-affinity/yorkie/api/yorkie/cluster/v1"
	"github.com/yorkie-affinity/yorkie/server/backend"
	"github.com/yorkie-affinity/yorkie/server/rpc/errinfo"
	"github.com/yorkie-affinity/yorkie/server/yson"
)

// UpdateDocumentByAdmin applies an admin's UpdateDocument to a document
// this node owns. The root comes as YSON and is parsed again here: the
// node that took the admin call checked it already, but this node trusts
// no body it did not read itself.
func (c *Service) UpdateDocumentByAdmin(ctx context.Context, req *connect.Request[clusterv1.UpdateDocumentByAdminRequest]) (*connect.Response[clusterv1.UpdateDocumentByAdminResponse], error) {
	m := req.Msg
	if err := adminDoc(m.GetDocumentId(), m.GetDocumentKey()); err != nil {
		return nil, err
	}
	u := backend.DocumentUpdate{SetSchema: m.GetSetSchema(), SchemaKey: m.GetSchemaKey()}
	if m.GetRoot() != "" {
		root, err := yson.ParseObject(m.GetRoot())
		if err != nil {
			return nil, errinfo.InvalidArgument(err)
		}
		u.Root = root
	}
	rt, err := c.ownedHere(ctx, m.GetProjectId(), m.GetDocumentKey(), req.Header())
	if err != nil {
		return nil, err
	}
	sum, err := c.cfg.Owner.UpdateHere(ctx, rt.Project, rt.Epoch, m.GetDocumentId(), u)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&clusterv1.UpdateDocumentByAdminResponse{Document: sum}), nil
}
