package rpc

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"connectrpc.com/connect"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/channel"
	"github.com/yorkie-affinity/yorkie/server/fault"
	"github.com/yorkie-affinity/yorkie/server/project"
	"github.com/yorkie-affinity/yorkie/server/routing"
	"github.com/yorkie-affinity/yorkie/server/rpc/errinfo"
	"github.com/yorkie-affinity/yorkie/server/rpc/validate"
)

// maxWatchResources bounds the resources of one Watch request. The JS SDK
// sends one; other clients may watch a few documents and channels together.
const maxWatchResources = 64

// watchSource is one resource of a Watch stream: its initialization and a
// loop that sends its events until it ends.
type watchSource struct {
	init  *api.ResourceInit
	run   func(ctx context.Context, send func(*api.WatchEvent) error) error
	close func()
}

// watchResources serves a Watch of channels, or of several resources in one
// stream. Each resource is routed on its own: those this node owns are
// watched here, the others at their owners, and their events are merged. A
// single resource another node owns is relayed whole, as a document's is.
func (s *Service) watchResources(ctx context.Context, req *connect.Request[api.WatchRequest], stream *connect.ServerStream[api.WatchResponse]) error {
	clientID := req.Msg.GetClientId()
	procedure := req.Spec().Procedure
	resources := req.Msg.GetResources()
	calls := make([]routing.DocumentCall, len(resources))
	for i, res := range resources {
		call, err := s.watchCall(ctx, procedure, clientID, res, req.Header())
		if err != nil {
			return err
		}
		calls[i] = call
	}
	closeStream, err := s.streams.Open(clientID, s.limits.MaxWatchStreamsPerClient)
	if err != nil {
		return err
	}
	defer closeStream()

	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var sources []*watchSource
	defer func() {
		for _, src := range sources {
			src.close()
		}
	}()
	for i, res := range resources {
		rt, err := s.routeWatch(ctx, procedure, calls[i], stream.ResponseHeader())
		if err != nil {
			return err
		}
		if i == 0 { // once for the whole stream, upstream names no resource
			if err := s.authorize(ctx, calls[i].Project, procedure, req.Header(), noAttributes); err != nil {
				return s.failRouted(ctx, procedure, rt, err)
			}
		}
		if len(resources) == 1 {
			s.stamp(stream.ResponseHeader(), rt)
			if rt.Owner != nil {
				return relayStream(ctx, s, procedure, calls[i], rt, func(ctx context.Context) (*connect.ServerStreamForClient[api.WatchResponse], error) {
					return rt.Owner.Watch(ctx, relayRequest(req.Msg, calls[i]))
				}, stream.ResponseHeader(), stream.Send)
			}
		}
		src, err := s.openSource(ctx, procedure, clientID, res, calls[i], rt)
		if err != nil {
			return err
		}
		sources = append(sources, src)
	}

	defer s.upstream.WatchOpened(project.FromContext(ctx))()
	inits := make([]*api.ResourceInit, len(sources))
	for i, src := range sources {
		inits[i] = src.init
	}
	if err := stream.Send(&api.WatchResponse{Body: &api.WatchResponse_Initialization{
		Initialization: &api.WatchInitialization{ResourceInits: inits},
	}}); err != nil {
		return s.streamEnded(ctx, procedure, err)
	}

	// connect's stream is not safe for concurrent sends.
	var mu sync.Mutex
	send := func(ev *api.WatchEvent) error {
		mu.Lock()
		defer mu.Unlock()
		return stream.Send(&api.WatchResponse{Body: &api.WatchResponse_Event{Event: ev}})
	}
	ended := make(chan error, len(sources))
	var wg sync.WaitGroup
	for _, src := range sources {
		wg.Go(func() { ended <- src.run(ctx, send) })
	}
	select {
	case <-ctx.Done():
	case <-s.closing.Done():
		err = errinfo.New(connect.CodeUnavailable, errinfo.CodeShuttingDown, fault.ErrShuttingDown)
	case err = <-ended:
	}
	cancel()
	wg.Wait()
	return s.endWatch(parent, procedure, err)
}

// watchCall validates one Watch resource and names the call that routes it,
// in the project the call's API key resolved to.
func (s *Service) watchCall(ctx context.Context, procedure, clientID string, res *api.ResourceDescriptor, header http.Header) (routing.DocumentCall, error) {
	p := project.FromContext(ctx)
	if ch := res.GetChannel(); ch != nil {
		key := ch.GetChannelKey()
		if err := channel.ValidateKey(key); err != nil {
			return routing.DocumentCall{}, errinfo.ToConnect(err)
		}
		return routing.DocumentCall{Kind: routing.CallWatchChannel, Project: p, ClientID: clientID, DocumentKey: channel.RoutingKey(key), Header: header}, nil
	}
	doc := res.GetDocument()
	if doc == nil {
		return routing.DocumentCall{}, errinfo.InvalidArgument(errors.New("watch resource names neither a document nor a channel"))
	}
	if err := validate.DocumentID(doc.GetDocumentId()); err != nil {
		return routing.DocumentCall{}, errinfo.InvalidArgument(err)
	}
	return routing.DocumentCall{Kind: routing.CallWatch, Project: p, ClientID: clientID, DocumentID: doc.GetDocumentId(), Header: header}, nil
}

// openSource subscribes to one resource, here or at its owner.
func (s *Service) openSource(ctx context.Context, procedure, clientID string, res *api.ResourceDescriptor, call routing.DocumentCall, rt routing.Route) (*watchSource, error) {
	if rt.Owner != nil {
		return s.remoteSource(ctx, procedure, clientID, res, call, rt)
	}
	if ch := res.GetChannel(); ch != nil {
		key := ch.GetChannelKey()
		w, err := s.openChannelWatch(ctx, rt, clientID, key)
		if err != nil {
			return nil, s.failRouted(ctx, procedure, rt, err)
		}
		c, _ := w.LatestCount()
		return &watchSource{
			init: &api.ResourceInit{Init: &api.ResourceInit_ChannelInit{ChannelInit: &api.ChannelInit{
				ChannelKey: key, SessionCount: c.Sessions, Seq: c.Seq,
			}}},
			run: func(ctx context.Context, send func(*api.WatchEvent) error) error {
				defer announceLater(w)()
				return s.pumpChannel(ctx, procedure, w, func(ev *api.ChannelEvent) error {
					return send(&api.WatchEvent{Event: &api.WatchEvent_ChannelEvent{
						ChannelEvent: &api.ChannelWatchEvent{ChannelKey: key, Event: ev},
					}})
				})
			},
			close: w.Close,
		}, nil
	}
	docID := res.GetDocument().GetDocumentId()
	sub, watchers, err := s.backend.Watch(ctx, rt.Project, rt.Epoch, clientID, docID)
	if err != nil {
		return nil, s.failRouted(ctx, procedure, rt, err)
	}
	if watchers == nil {
		watchers = []string{}
	}
	return &watchSource{
		init: &api.ResourceInit{Init: &api.ResourceInit_DocumentInit{DocumentInit: &api.DocumentInit{
			DocumentId: docID, ClientIds: watchers,
		}}},
		run: func(ctx context.Context, send func(*api.WatchEvent) error) error {
			for {
				select {
				case <-ctx.Done():
					return nil
				case <-sub.Done():
					return s.subscriptionEnded(ctx, procedure, sub.Err())
				case <-sub.Ready():
				}
				for ev, ok := sub.Next(); ok; ev, ok = sub.Next() {
					out := &api.DocEvent{Type: ev.Type, Publisher: ev.Publisher}
					if err := send(&api.WatchEvent{Event: &api.WatchEvent_DocEvent{DocEvent: &api.DocWatchEvent{
						DocumentId: docID, Event: out,
					}}}); err != nil {
						return streamSendFailed{err}
					}
					s.watchEventSent(ctx, out)
				}
			}
		},
		close: sub.Close,
	}, nil
}

// remoteSource opens a one-resource Watch at the owner and takes its
// initialization; its events follow until the owner ends the stream.
func (s *Service) remoteSource(ctx context.Context, procedure, clientID string, res *api.ResourceDescriptor, call routing.DocumentCall, rt routing.Route) (*watchSource, error) {
	ctx, stop := whileOwnerLives(ctx, rt)
	up, err := rt.Owner.Watch(ctx, relayRequest(&api.WatchRequest{ClientId: clientID, Resources: []*api.ResourceDescriptor{res}}, call))
	if err != nil {
		stop()
		return nil, s.relayFailed(ctx, procedure, rt, err)
	}
	closeUp := func() {
		_ = up.Close()
		stop()
	}
	if !up.Receive() {
		err := up.Err()
		closeUp()
		if err == nil {
			err = errors.New("the owner ended the stream before its initialization")
		}
		return nil, s.relayFailed(ctx, procedure, rt, err)
	}
	inits := up.Msg().GetInitialization().GetResourceInits()
	if len(inits) != 1 {
		closeUp()
		return nil, s.relayFailed(ctx, procedure, rt, fmt.Errorf("the owner's first message has %d resource inits, want 1", len(inits)))
	}
	return &watchSource{
		init: inits[0],
		run: func(runCtx context.Context, send func(*api.WatchEvent) error) error {
			// up was opened on a context derived from runCtx's parent, which
			// is cancelled before the merge waits for its sources: Receive
			// returns then.
			for up.Receive() {
				if ev := up.Msg().GetEvent(); ev != nil {
					if err := send(ev); err != nil {
						return streamSendFailed{err}
					}
				}
			}
			if runCtx.Err() != nil && !ownerGone(rt) {
				return nil
			}
			if err := up.Err(); err != nil {
				return s.relayFailed(ctx, procedure, rt, err)
			}
			return nil
		},
		close: closeUp,
	}, nil
}
