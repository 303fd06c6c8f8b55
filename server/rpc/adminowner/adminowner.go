// Package adminowner serves the owner's side of the AdminService's document
// and channel calls: a call about a document or a channel group is served
// where it lives, on this node when it owns it, else at its owner through
// the owner's ClusterService. What such a call shows of a document is the
// owner's current in-memory state. package admin asks it (admin.Owners),
// and the ClusterService serves the calls other nodes pass on with its
// *Here methods (clustersvc.Owner). Its errors are Connect errors with
// upstream's codes.
package adminowner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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

// errNoSummary is an owner's answer without the document's summary.
var errNoSummary = errors.New("the owner sent no summary")

// adminSender is the sender of the AdminService's broadcasts, the
// initial actor: no client's own, so every watcher gets them.
const adminSender = "000000000000000000000000"

// Router tells where a document or channel group is served
// (routing.Router is one, as is the router a test stages).
type Router interface {
	// Route returns where call is served; a route without an Owner is
	// served here, under its Epoch. Its errors are routing's refusals.
	Route(ctx context.Context, call routing.DocumentCall) (routing.Route, error)
	// RelayFailed tells the router that reaching rt's owner failed with
	// err, so it can stop believing in that owner.
	RelayFailed(ctx context.Context, rt routing.Route, err error)
}

// Cluster reaches the ClusterService of the cluster's other members
// (routing.Router is one).
type Cluster interface {
	// ClusterOf returns the ClusterService of the member at addr (a
	// Route's Addr).
	ClusterOf(addr string) clusterv1connect.ClusterServiceClient
	// Others returns the ClusterService of every other member.
	Others() []clusterv1connect.ClusterServiceClient
}

// Config configures Owners.
type Config struct {
	// Backend holds the documents this node owns. Required.
	Backend *backend.Backend
	// Channels holds the channel sessions this node serves. Required.
	Channels *channel.Manager
	// Router tells where a document or channel group is served. Required.
	Router Router
	// Cluster reaches the other members; nil when the node has none to
	// reach (a routing a test staged): a call owned elsewhere then fails,
	// and channels are listed from this node only.
	Cluster Cluster
	// Logger receives the owner's side's internal failures; nil discards.
	Logger *slog.Logger
}

// Owners serves the owner's side of the AdminService's document and
// channel calls.
type Owners struct {
	backend  *backend.Backend
	channels *channel.Manager
	router   Router
	cluster  Cluster
	logger   *slog.Logger
}

// New returns the owner's side of the admin calls for the node cfg names.
func New(cfg Config) (*Owners, error) {
	switch {
	case cfg.Backend == nil:
		return nil, errors.New("adminowner: Config.Backend is required")
	case cfg.Channels == nil:
		return nil, errors.New("adminowner: Config.Channels is required")
	case cfg.Router == nil:
		return nil, errors.New("adminowner: Config.Router is required")
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Owners{backend: cfg.Backend, channels: cfg.Channels, router: cfg.Router, cluster: cfg.Cluster, logger: logger}, nil
}

// ownerError maps an error of the owner's side for the admin caller.
func (a *Owners) ownerError(ctx context.Context, err error) error {
	switch {
	case errors.Is(err, backend.ErrDocumentAttached):
		return errinfo.New(connect.CodeFailedPrecondition, errinfo.CodeDocumentAttached, err)
	case errors.Is(err, backend.ErrNoSuchServerSeq):
		return errinfo.InvalidArgument(err)
	}
	out := errinfo.ToConnect(err)
	if cause := errinfo.InternalCause(out); cause != nil {
		a.logger.ErrorContext(ctx, "admin call at the owner failed", "error", cause)
	}
	return out
}

// routeAdmin finds where the document or channel group bound under key in
// project p is served: here (nil client) on the route, or at the owner's
// ClusterService. Admin calls always name the key, so unlike the
// YorkieService's calls there is no key to look up first.
func (a *Owners) routeAdmin(ctx context.Context, p *database.ProjectInfo, key string) (routing.Route, clusterv1connect.ClusterServiceClient, error) {
	rt, err := a.router.Route(ctx, routing.DocumentCall{Kind: routing.CallAdmin, Project: p, DocumentKey: key})
	if err != nil {
		return routing.Route{}, nil, errinfo.RouteError(err)
	}
	if rt.Owner == nil {
		return rt, nil, nil
	}
	if a.cluster == nil || rt.Addr == "" {
		return routing.Route{}, nil, fmt.Errorf("no cluster service to reach the owner of %q", key)
	}
	return rt, a.cluster.ClusterOf(rt.Addr), nil
}

// remoteFailed forgets an owner that could not be reached, as a failed
// relay does, and returns the error for the caller.
func (a *Owners) remoteFailed(ctx context.Context, rt routing.Route, err error) error {
	ce := errinfo.Remote(err, "call the owner")
	a.router.RelayFailed(ctx, rt, ce)
	return ce
}

// DocumentSummary returns the owner's summary of a live document: root and
// size when root, the attached clients' presences when presences, and the
// count of attached clients. doc names the document in p.
func (a *Owners) DocumentSummary(ctx context.Context, p *database.ProjectInfo, doc *database.DocInfo, root, presences bool) (*admin.OwnerState, error) {
	rt, owner, err := a.routeAdmin(ctx, p, doc.Key)
	if err != nil {
		return nil, a.ownerError(ctx, err)
	}
	if owner != nil {
		resp, err := owner.GetDocumentSummary(ctx, connect.NewRequest(&clusterv1.GetDocumentSummaryRequest{
			ProjectId: p.ID, DocumentId: doc.ID, DocumentKey: doc.Key, IncludeRoot: root, IncludePresences: presences,
		}))
		if err != nil {
			return nil, a.remoteFailed(ctx, rt, err)
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
func (a *Owners) SummaryHere(ctx context.Context, p *database.ProjectInfo, epoch int64, docID string, root, presences bool) (*admin.OwnerState, error) {
	st, err := a.localSummary(ctx, p, epoch, docID, root, presences)
	if err != nil {
		return nil, a.ownerError(ctx, err)
	}
	return st, nil
}

// localSummary is DocumentSummary at the owner: the fields the owner's
// state gives (the caller adds the stored ones: ID, key, times).
func (a *Owners) localSummary(ctx context.Context, p *database.ProjectInfo, epoch int64, docID string, root, presences bool) (*admin.OwnerState, error) {
	sum, err := a.backend.DocumentSummary(ctx, p, epoch, docID, root, presences)
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
func (a *Owners) RemoveDocument(ctx context.Context, p *database.ProjectInfo, doc *database.DocInfo, force bool) error {
	rt, owner, err := a.routeAdmin(ctx, p, doc.Key)
	if err != nil {
		return a.ownerError(ctx, err)
	}
	if owner != nil {
		_, err := owner.RemoveDocumentByAdmin(ctx, connect.NewRequest(&clusterv1.RemoveDocumentByAdminRequest{
			ProjectId: p.ID, DocumentId: doc.ID, DocumentKey: doc.Key, Force: force,
		}))
		if err != nil {
			return a.remoteFailed(ctx, rt, err)
		}
		return nil
	}
	return a.RemoveHere(ctx, rt.Project, rt.Epoch, doc.ID, force)
}

// RemoveHere is RemoveDocument at the owner, of a document of project p
// held here under epoch.
func (a *Owners) RemoveHere(ctx context.Context, p *database.ProjectInfo, epoch int64, docID string, force bool) error {
	if err := a.backend.RemoveDocumentByAdmin(ctx, p, epoch, docID, force); err != nil {
		return a.ownerError(ctx, err)
	}
	return nil
}

// DocumentAt builds the stored document as of server_seq seq: a past
// state no owner keeps, read from the database where the call arrived.
func (a *Owners) DocumentAt(ctx context.Context, p *database.ProjectInfo, doc *database.DocInfo, seq int64) (*document.Document, error) {
	d, err := a.backend.DocumentAt(ctx, doc, seq)
	if err != nil {
		return nil, a.ownerError(ctx, err)
	}
	return d, nil
}

// GetChannels returns the session count of each channel, with its
// sub-channels' when includeSub, from the owner of each channel group.
func (a *Owners) GetChannels(ctx context.Context, p *database.ProjectInfo, keys []string, includeSub bool) ([]*api.ChannelSummary, error) {
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
		rt, owner, err := a.routeAdmin(ctx, p, g)
		if err != nil {
			return nil, a.ownerError(ctx, err)
		}
		if owner != nil {
			resp, err := owner.GetChannels(ctx, connect.NewRequest(&clusterv1.GetChannelsRequest{
				ProjectId: p.ID, ChannelKeys: byGroup[g], IncludeSubPath: includeSub,
			}))
			if err != nil {
				return nil, a.remoteFailed(ctx, rt, err)
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
func (a *Owners) ChannelCountsHere(projectID string, keys []string, includeSub bool) []*api.ChannelSummary {
	out := make([]*api.ChannelSummary, 0, len(keys))
	for _, k := range keys {
		scoped := project.ScopedKey(projectID, k)
		n := a.channels.OwnCount(scoped)
		if includeSub {
			n = a.channels.Count(scoped)
		}
		out = append(out, &api.ChannelSummary{Key: k, SessionCount: int32(n)})
	}
	return out
}

// ListChannels returns, in key order, up to limit of the project's
// channels with sessions whose keys start with query: every node lists
// the channel groups it owns.
func (a *Owners) ListChannels(ctx context.Context, p *database.ProjectInfo, query string, limit int) ([]*api.ChannelSummary, error) {
	all := a.ChannelsHere(p.ID, query, limit)
	if a.cluster != nil {
		for _, other := range a.cluster.Others() {
			resp, err := other.ListChannels(ctx, connect.NewRequest(&clusterv1.ListChannelsRequest{
				ProjectId: p.ID, Query: query, Limit: int32(limit),
			}))
			if err != nil {
				return nil, errinfo.Remote(err, "list channels of another node")
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
func (a *Owners) ChannelsHere(projectID, query string, limit int) []*api.ChannelSummary {
	prefix := project.ScopedKey(projectID, query)
	keep := func(string) bool { return true }
	if projectID == database.DefaultProjectID {
		// The default project's keys are unscoped; others' hold a "/".
		keep = func(k string) bool { return !strings.Contains(k, "/") }
	}
	list := a.channels.List(prefix, keep, limit)
	out := make([]*api.ChannelSummary, len(list))
	for i, c := range list {
		_, key := project.SplitScopedKey(c.Key)
		out[i] = &api.ChannelSummary{Key: key, SessionCount: int32(c.Sessions)}
	}
	return out
}

// Broadcast hands a message to the watchers of a channel at its owner.
func (a *Owners) Broadcast(ctx context.Context, p *database.ProjectInfo, key, topic string, payload []byte) error {
	if err := channel.ValidateKey(key); err != nil {
		return errinfo.ToConnect(err)
	}
	rt, owner, err := a.routeAdmin(ctx, p, channel.RoutingKey(key))
	if err != nil {
		return a.ownerError(ctx, err)
	}
	if owner != nil {
		_, err := owner.BroadcastByAdmin(ctx, connect.NewRequest(&clusterv1.BroadcastByAdminRequest{
			ProjectId: p.ID, ChannelKey: key, Topic: topic, Payload: payload,
		}))
		if err != nil {
			return a.remoteFailed(ctx, rt, err)
		}
		return nil
	}
	return a.BroadcastHere(ctx, p.ID, key, topic, payload)
}

// BroadcastHere is Broadcast at the owner of the channel's group.
func (a *Owners) BroadcastHere(ctx context.Context, projectID, key, topic string, payload []byte) error {
	if err := a.channels.Broadcast(adminSender, project.ScopedKey(projectID, key), topic, payload); err != nil {
		return a.ownerError(ctx, err)
	}
	return nil
}

// sortChannels orders channel summaries by key.
func sortChannels(cs []*api.ChannelSummary) {
	sort.Slice(cs, func(i, j int) bool { return cs[i].GetKey() < cs[j].GetKey() })
}
