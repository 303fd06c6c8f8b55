package rpc

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"connectrpc.com/connect"

	clusterv1 "github.com/yorkie-affinity/yorkie/api/yorkie/cluster/v1"
	"github.com/yorkie-affinity/yorkie/api/yorkie/cluster/v1/clusterv1connect"
	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/admin"
	"github.com/yorkie-affinity/yorkie/server/backend"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/channel"
	"github.com/yorkie-affinity/yorkie/server/document"
	"github.com/yorkie-affinity/yorkie/server/project"
	"github.com/yorkie-affinity/yorkie/server/routing"
	"github.com/yorkie-affinity/yorkie/server/rpc/errinfo"
)

// The AdminService's document and channel calls are served where the
// document or channel group lives: this node when it owns it, else its
// owner through the ClusterService. What they show of a document is the
// owner's current in-memory state.

// errNoSummary is an owner's answer without the document's summary.
var errNoSummary = errors.New("the owner sent no summary")

// adminSender is the sender of the AdminService's broadcasts, the
// initial actor: no client's own, so every watcher gets them.
const adminSender = "000000000000000000000000"

// clusterLister is what a router that knows the other members offers.
type clusterLister interface {
	ClusterOf(addr string) clusterv1connect.ClusterServiceClient
	Others() []clusterv1connect.ClusterServiceClient
}

// AdminOwners serves the owner's side of the AdminService's document and
// channel calls (package admin asks it). Its errors are Connect errors
// with upstream's codes.
type AdminOwners struct{ s *Service }

// AdminOwners returns the service's owner side of the admin calls.
func (s *Service) AdminOwners() *AdminOwners { return &AdminOwners{s: s} }

// ownerError maps an error of the owner's side for the admin caller.
func (s *Service) ownerError(ctx context.Context, err error) error {
	switch {
	case errors.Is(err, backend.ErrDocumentAttached):
		return errinfo.New(connect.CodeFailedPrecondition, errinfo.CodeDocumentAttached, err)
	case errors.Is(err, backend.ErrNoSuchServerSeq):
		return errinfo.InvalidArgument(err)
	}
	out := errinfo.ToConnect(err)
	if cause := errinfo.InternalCause(out); cause != nil {
		s.logger.ErrorContext(ctx, "admin call at the owner failed", "error", cause)
	}
	return out
}

// routeAdmin finds where the document or channel group bound under key in
// project p is served: here (nil client) on the route, or at the owner's
// ClusterService.
func (s *Service) routeAdmin(ctx context.Context, p *database.ProjectInfo, key string) (routing.Route, clusterv1connect.ClusterServiceClient, error) {
	rt, err := s.route(ctx, routing.DocumentCall{Kind: routing.CallAdmin, Project: p, DocumentKey: key})
	if err != nil {
		return routing.Route{}, nil, err
	}
	if rt.Owner == nil {
		return rt, nil, nil
	}
	cl, ok := s.router.(clusterLister)
	if !ok || rt.Addr == "" {
		return routing.Route{}, nil, fmt.Errorf("no cluster service to reach the owner of %q", key)
	}
	return rt, cl.ClusterOf(rt.Addr), nil
}

// remoteFailed forgets an owner that could not be reached, as a failed
// relay does, and returns the error for the caller.
func (s *Service) remoteFailed(ctx context.Context, rt routing.Route, err error) error {
	var ce *connect.Error
	if !errors.As(err, &ce) || errinfo.Name(ce) == "" {
		ce = errinfo.New(connect.CodeUnavailable, errinfo.CodeUnavailable, fmt.Errorf("call the owner: %w", err))
	}
	s.router.RelayFailed(ctx, rt, ce)
	return ce
}

// DocumentSummary returns the owner's summary of a live document: root and
// size when root, the attached clients' presences when presences, and the
// count of attached clients. doc names the document in p.
func (a *AdminOwners) DocumentSummary(ctx context.Context, p *database.ProjectInfo, doc *database.DocInfo, root, presences bool) (*admin.OwnerState, error) {
	s := a.s
	rt, owner, err := s.routeAdmin(ctx, p, doc.Key)
	if err != nil {
		return nil, s.ownerError(ctx, err)
	}
	if owner != nil {
		resp, err := owner.GetDocumentSummary(ctx, connect.NewRequest(&clusterv1.GetDocumentSummaryRequest{
			ProjectId: p.ID, DocumentId: doc.ID, DocumentKey: doc.Key, IncludeRoot: root, IncludePresences: presences,
		}))
		if err != nil {
			return nil, s.remoteFailed(ctx, rt, err)
		}
		m := resp.Msg
		if m.GetDocument() == nil {
			return nil, errinfo.New(connect.CodeUnavailable, errinfo.CodeUnavailable, errNoSummary)
		}
		return &admin.OwnerState{Summary: m.GetDocument(), ServerSeq: m.GetServerSeq(),
			GarbageLen: int(m.GetGarbageLen()), SnapshotSeq: m.GetSnapshotServerSeq()}, nil
	}
	return a.SummaryHere(ctx, rt.Project, rt.Epoch, doc.ID, root, presences)
}

// SummaryHere is DocumentSummary at the owner, of a document of project p
// held here under epoch.
func (a *AdminOwners) SummaryHere(ctx context.Context, p *database.ProjectInfo, epoch int64, docID string, root, presences bool) (*admin.OwnerState, error) {
	st, err := a.s.localSummary(ctx, p, epoch, docID, root, presences)
	if err != nil {
		return nil, a.s.ownerError(ctx, err)
	}
	return st, nil
}

// localSummary is DocumentSummary at the owner: the fields the owner's
// state gives (the caller adds the stored ones: ID, key, times).
func (s *Service) localSummary(ctx context.Context, p *database.ProjectInfo, epoch int64, docID string, root, presences bool) (*admin.OwnerState, error) {
	sum, err := s.backend.DocumentSummary(ctx, p, epoch, docID, root, presences)
	if err != nil {
		return nil, err
	}
	out := &api.DocumentSummary{Root: sum.Root, AttachedClients: int32(sum.Attached)}
	if root {
		out.DocumentSize = &api.DocSize{
			Live: &api.DataSize{Data: int32(sum.Size.Live.Data), Meta: int32(sum.Size.Live.Meta)},
			Gc:   &api.DataSize{Data: int32(sum.Size.GC.Data), Meta: int32(sum.Size.GC.Meta)},
		}
	}
	if presences {
		out.Presences = make(map[string]*api.Presence, len(sum.Presences))
		for id, data := range sum.Presences {
			out.Presences[id] = &api.Presence{Data: data}
		}
	}
	return &admin.OwnerState{Summary: out, ServerSeq: sum.ServerSeq, GarbageLen: sum.GarbageLen, SnapshotSeq: sum.SnapshotSeq}, nil
}

// RemoveDocument removes a live document at its owner; unless force, a
// document with clients attached is refused with ErrDocumentAttached.
func (a *AdminOwners) RemoveDocument(ctx context.Context, p *database.ProjectInfo, doc *database.DocInfo, force bool) error {
	s := a.s
	rt, owner, err := s.routeAdmin(ctx, p, doc.Key)
	if err != nil {
		return s.ownerError(ctx, err)
	}
	if owner != nil {
		_, err := owner.RemoveDocumentByAdmin(ctx, connect.NewRequest(&clusterv1.RemoveDocumentByAdminRequest{
			ProjectId: p.ID, DocumentId: doc.ID, DocumentKey: doc.Key, Force: force,
		}))
		if err != nil {
			return s.remoteFailed(ctx, rt, err)
		}
		return nil
	}
	return a.RemoveHere(ctx, rt.Project, rt.Epoch, doc.ID, force)
}

// RemoveHere is RemoveDocument at the owner, of a document of project p
// held here under epoch.
func (a *AdminOwners) RemoveHere(ctx context.Context, p *database.ProjectInfo, epoch int64, docID string, force bool) error {
	if err := a.s.backend.RemoveDocumentByAdmin(ctx, p, epoch, docID, force); err != nil {
		return a.s.ownerError(ctx, err)
	}
	return nil
}

// DocumentAt builds the stored document as of server_seq seq: a past
// state no owner keeps, read from the database where the call arrived.
func (a *AdminOwners) DocumentAt(ctx context.Context, p *database.ProjectInfo, doc *database.DocInfo, seq int64) (*document.Document, error) {
	d, err := a.s.backend.DocumentAt(ctx, doc, seq)
	if err != nil {
		return nil, a.s.ownerError(ctx, err)
	}
	return d, nil
}

// GetChannels returns the session count of each channel, with its
// sub-channels' when includeSub, from the owner of each channel group.
func (a *AdminOwners) GetChannels(ctx context.Context, p *database.ProjectInfo, keys []string, includeSub bool) ([]*api.ChannelSummary, error) {
	s := a.s
	var groups []string
	byGroup := map[string][]string{}
	for _, k := range keys {
		if err := channel.ValidateKey(k); err != nil {
			return nil, errinfo.ToConnect(err)
		}
		g := channel.RoutingKey(k)
		if _, ok := byGroup[g]; !ok {
			groups = append(groups, g)
		}
		byGroup[g] = append(byGroup[g], k)
	}
	counts := map[string]int32{}
	for _, g := range groups {
		rt, owner, err := s.routeAdmin(ctx, p, g)
		if err != nil {
			return nil, s.ownerError(ctx, err)
		}
		if owner != nil {
			resp, err := owner.GetChannels(ctx, connect.NewRequest(&clusterv1.GetChannelsRequest{
				ProjectId: p.ID, ChannelKeys: byGroup[g], IncludeSubPath: includeSub,
			}))
			if err != nil {
				return nil, s.remoteFailed(ctx, rt, err)
			}
			for _, c := range resp.Msg.GetChannels() {
				counts[c.GetKey()] = c.GetSessionCount()
			}
			continue
		}
		for _, c := range a.ChannelCountsHere(p.ID, byGroup[g], includeSub) {
			counts[c.GetKey()] = c.GetSessionCount()
		}
	}
	out := make([]*api.ChannelSummary, 0, len(keys))
	for _, k := range keys {
		out = append(out, &api.ChannelSummary{Key: k, SessionCount: counts[k]})
	}
	return out, nil
}

// ChannelCountsHere counts the channels of a group this node owns.
func (a *AdminOwners) ChannelCountsHere(projectID string, keys []string, includeSub bool) []*api.ChannelSummary {
	s := a.s
	out := make([]*api.ChannelSummary, 0, len(keys))
	for _, k := range keys {
		scoped := project.ScopedKey(projectID, k)
		n := s.channels.OwnCount(scoped)
		if includeSub {
			n = s.channels.Count(scoped)
		}
		out = append(out, &api.ChannelSummary{Key: k, SessionCount: int32(n)})
	}
	return out
}

// ListChannels returns, in key order, up to limit of the project's
// channels with sessions whose keys start with query: every node lists
// the channel groups it owns.
func (a *AdminOwners) ListChannels(ctx context.Context, p *database.ProjectInfo, query string, limit int) ([]*api.ChannelSummary, error) {
	s := a.s
	all := a.ChannelsHere(p.ID, query, limit)
	if cl, ok := s.router.(clusterLister); ok {
		for _, other := range cl.Others() {
			resp, err := other.ListChannels(ctx, connect.NewRequest(&clusterv1.ListChannelsRequest{
				ProjectId: p.ID, Query: query, Limit: int32(limit),
			}))
			if err != nil {
				var ce *connect.Error
				if !errors.As(err, &ce) || errinfo.Name(ce) == "" {
					err = errinfo.New(connect.CodeUnavailable, errinfo.CodeUnavailable, fmt.Errorf("list channels of another node: %w", err))
				}
				return nil, err
			}
			all = append(all, resp.Msg.GetChannels()...)
		}
	}
	merged := map[string]*api.ChannelSummary{}
	for _, c := range all {
		if m, ok := merged[c.GetKey()]; ok {
			m.SessionCount += c.GetSessionCount()
			continue
		}
		merged[c.GetKey()] = &api.ChannelSummary{Key: c.GetKey(), SessionCount: c.GetSessionCount()}
	}
	out := make([]*api.ChannelSummary, 0, len(merged))
	for _, c := range merged {
		out = append(out, c)
	}
	sortChannels(out)
	return out[:min(len(out), limit)], nil
}

// ChannelsHere lists the project's channels this node holds.
func (a *AdminOwners) ChannelsHere(projectID, query string, limit int) []*api.ChannelSummary {
	s := a.s
	prefix := project.ScopedKey(projectID, query)
	keep := func(string) bool { return true }
	if projectID == database.DefaultProjectID {
		// The default project's keys are unscoped; others' hold a "/".
		keep = func(k string) bool { return !strings.Contains(k, "/") }
	}
	list := s.channels.List(prefix, keep, limit)
	out := make([]*api.ChannelSummary, len(list))
	for i, c := range list {
		_, key := project.SplitScopedKey(c.Key)
		out[i] = &api.ChannelSummary{Key: key, SessionCount: int32(c.Sessions)}
	}
	return out
}

// Broadcast hands a message to the watchers of a channel at its owner.
func (a *AdminOwners) Broadcast(ctx context.Context, p *database.ProjectInfo, key, topic string, payload []byte) error {
	s := a.s
	if err := channel.ValidateKey(key); err != nil {
		return errinfo.ToConnect(err)
	}
	rt, owner, err := s.routeAdmin(ctx, p, channel.RoutingKey(key))
	if err != nil {
		return s.ownerError(ctx, err)
	}
	if owner != nil {
		_, err := owner.BroadcastByAdmin(ctx, connect.NewRequest(&clusterv1.BroadcastByAdminRequest{
			ProjectId: p.ID, ChannelKey: key, Topic: topic, Payload: payload,
		}))
		if err != nil {
			return s.remoteFailed(ctx, rt, err)
		}
		return nil
	}
	return a.BroadcastHere(ctx, p.ID, key, topic, payload)
}

// BroadcastHere is Broadcast at the owner of the channel's group.
func (a *AdminOwners) BroadcastHere(ctx context.Context, projectID, key, topic string, payload []byte) error {
	if err := a.s.channels.Broadcast(adminSender, project.ScopedKey(projectID, key), topic, payload); err != nil {
		return a.s.ownerError(ctx, err)
	}
	return nil
}

// sortChannels orders channel summaries by key.
func sortChannels(cs []*api.ChannelSummary) {
	sort.Slice(cs, func(i, j int) bool { return cs[i].GetKey() < cs[j].GetKey() })
}
