package clustersvc

import (
	"context"
	"errors"

	"connectrpc.com/connect"

	clusterv1 "github.com/yorkie-affinity/yorkie/api/yorkie/cluster/v1"
	"github.com/yorkie-affinity/yorkie/server/rpc/errinfo"
)

// Reach witnesses for another node that found a member unreachable: it
// answers whether this node reaches the member (affinity.Manager.Reaches).
func (c *Service) Reach(ctx context.Context, req *connect.Request[clusterv1.ReachRequest]) (*connect.Response[clusterv1.ReachResponse], error) {
	if c.cfg.Reach == nil {
		return nil, errinfo.New(connect.CodeUnimplemented, errinfo.CodeUnimplemented, errors.New("reach is not served here"))
	}
	reached, err := c.cfg.Reach(ctx, req.Msg.GetMember())
	if err != nil {
		return nil, errinfo.ToConnect(err)
	}
	return connect.NewResponse(&clusterv1.ReachResponse{Reached: reached}), nil
}

// Drain hands this node's documents on to their next owners (the
// AdminService's DrainNode naming this node) and answers how many are left.
func (c *Service) Drain(ctx context.Context, _ *connect.Request[clusterv1.DrainRequest]) (*connect.Response[clusterv1.DrainResponse], error) {
	if c.cfg.Drain == nil {
		return nil, errinfo.New(connect.CodeUnimplemented, errinfo.CodeUnimplemented, errors.New("drain is not served here"))
	}
	left, err := c.cfg.Drain(ctx)
	if err != nil {
		return nil, errinfo.ToConnect(err)
	}
	return connect.NewResponse(&clusterv1.DrainResponse{DocumentsLeft: int32(left)}), nil
}
