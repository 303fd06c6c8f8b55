package rpc

import (
	"context"

	"connectrpc.com/connect"

	clusterv1 "github.com/yorkie-affinity/yorkie/api/yorkie/cluster/v1"
	"github.com/yorkie-affinity/yorkie/server/backend"
	"github.com/yorkie-affinity/yorkie/server/yson"
)

// UpdateDocumentByAdmin applies an admin's UpdateDocument to a document
// this node owns. The root comes as YSON and is parsed again here: the
// node that took the admin call checked it already, but this node trusts
// no body it did not read itself.
func (c *ClusterService) UpdateDocumentByAdmin(ctx context.Context, req *connect.Request[clusterv1.UpdateDocumentByAdminRequest]) (*connect.Response[clusterv1.UpdateDocumentByAdminResponse], error) {
	m := req.Msg
	if err := adminDoc(m.GetDocumentId(), m.GetDocumentKey()); err != nil {
		return nil, err
	}
	u := backend.DocumentUpdate{SetSchema: m.GetSetSchema(), SchemaKey: m.GetSchemaKey()}
	if m.GetRoot() != "" {
		root, err := yson.ParseObject(m.GetRoot())
		if err != nil {
			return nil, invalidArgument(err)
		}
		u.Root = root
	}
	rt, err := c.ownedHere(ctx, m.GetProjectId(), m.GetDocumentKey(), req.Header())
	if err != nil {
		return nil, err
	}
	sum, err := c.cfg.Service.updateHere(ctx, rt, m.GetDocumentId(), u)
	if err != nil {
		return nil, c.cfg.Service.ownerError(ctx, err)
	}
	return connect.NewResponse(&clusterv1.UpdateDocumentByAdminResponse{Document: sum}), nil
}
