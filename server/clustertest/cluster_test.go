package clustertest_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"

	"connectrpc.com/connect"

	clusterv1 "github.com/yorkie-affinity/yorkie/api/yorkie/cluster/v1"
	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/affinity"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/clustertest"
	"github.com/yorkie-affinity/yorkie/server/routing"
	"github.com/yorkie-affinity/yorkie/server/servertest"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
)

const (
	changed   = api.DocEventType_DOC_EVENT_TYPE_DOCUMENT_CHANGED
	watched   = api.DocEventType_DOC_EVENT_TYPE_DOCUMENT_WATCHED
	unwatched = api.DocEventType_DOC_EVENT_TYPE_DOCUMENT_UNWATCHED
)

// TestClientsOnDifferentNodesSeeEachOther attaches one client of a document
// through each of three nodes (forward mode) and checks that every client
// sees the others come and go on its Watch stream and pulls their edits and
// presence, whichever node owns the document.
func TestClientsOnDifferentNodesSeeEachOther(t *testing.T) {
	for _, p := range []servertest.Protocol{servertest.ConnectJSON, servertest.GRPC, servertest.ConnectProto, servertest.GRPCWeb} {
		t.Run(p.String(), func(t *testing.T) {
			c := clustertest.Start(t, 3)
			docKey := wire.UniqueKey(t, "doc")
			rs := make([]*wire.Replica, 3)
			ws := make([]*wire.Stream[api.WatchResponse], 3)
			for i := range rs {
				rs[i] = wire.NewReplica(t, c.Node(i).Client(p))
				rs[i].MustAttach(docKey)
				var watchers []string
				ws[i], watchers = watchReady(t, rs[i])
				for j := range i + 1 {
					if !slices.Contains(watchers, rs[j].ID) {
						t.Fatalf("initialization for client on node %d lists %v, missing the client on node %d", i, watchers, j)
					}
				}
				for j := range i {
					awaitEvent(t, ws[j], watched, rs[i].ID)
				}
			}
			owner := ownerOf(t, c, docKey)
			for i, r := range rs {
				if got := r.Header.Get(sessionKeyHeader); got != owner.Node.SessionKey() {
					t.Errorf("attach through node %d: %s %q, want the owner's %q", i, sessionKeyHeader, got, owner.Node.SessionKey())
				}
			}

			// Each client edits and sets its presence in turn; the others are
			// told and pull both.
			for i, r := range rs {
				r.Edit(2)
				presence := wire.ChangeKey(r.NewChange(map[string]string{"cursor": `"` + r.ID + `"`}))
				r.MustPushPull()
				if len(r.Pending) != 0 {
					t.Fatalf("client on node %d: %d changes unacknowledged", i, len(r.Pending))
				}
				for j, other := range rs {
					if j == i {
						continue
					}
					awaitEvent(t, ws[j], changed, r.ID)
					other.MustPushPull()
					if err := hasPulled(other, r); err != nil {
						t.Fatalf("client on node %d: %v", j, err)
					}
					if got := other.Pulled[presence].GetPresenceChange().GetPresence().GetData()["cursor"]; got != `"`+r.ID+`"` {
						t.Fatalf("client on node %d got presence %q of client on node %d, want its id", j, got, i)
					}
				}
			}
			checkStored(t, checkLog(t, c.DB(), rs[0].DocID), rs...)

			// A client leaving: the others see UNWATCHED.
			ws[2].Close()
			awaitEvent(t, ws[0], unwatched, rs[2].ID)
			awaitEvent(t, ws[1], unwatched, rs[2].ID)
		})
	}
}

// redirectCall is one document call sent to a node in redirect mode.
type redirectCall struct {
	name string
	// send sends the call through c and returns its error and response
	// header (or, for a stream, the header of the stream's end).
	send func(t *testing.T, c *clustertest.Node, p servertest.Protocol, r *wire.Replica) (http.Header, error)
}

var redirectCalls = []redirectCall{
	{"PushPullChanges", func(t *testing.T, n *clustertest.Node, p servertest.Protocol, r *wire.Replica) (http.Header, error) {
		resp, err := n.Client(p).PushPullChanges(wire.Context(t), r.PushPullRequest())
		var cerr *connect.Error
		if errors.As(err, &cerr) {
			// A unary call's response headers come with its error.
			return cerr.Meta(), err
		}
		if err != nil {
			return nil, err
		}
		return resp.Header(), nil
	}},
	{"Watch", func(t *testing.T, n *clustertest.Node, p servertest.Protocol, r *wire.Replica) (http.Header, error) {
		return firstMessage(t, "Watch", func(ctx context.Context) (*connect.ServerStreamForClient[api.WatchResponse], error) {
			return n.Client(p).Watch(ctx, r.WatchRequest())
		}, func(m *api.WatchResponse) bool { return m.GetInitialization() != nil })
	}},
	{"WatchDocument", func(t *testing.T, n *clustertest.Node, p servertest.Protocol, r *wire.Replica) (http.Header, error) {
		return firstMessage(t, "WatchDocument", func(ctx context.Context) (*connect.ServerStreamForClient[api.WatchDocumentResponse], error) {
			return n.Client(p).WatchDocument(ctx, connect.NewRequest(&api.WatchDocumentRequest{ClientId: r.ID, DocumentId: r.DocID}))
		}, func(m *api.WatchDocumentResponse) bool { return m.GetInitialization() != nil })
	}},
}

// firstMessage opens a stream with open and reads its first message, which
// must be an initialization (isInit), and returns the response header: what
// the redirect contract looks at.
func firstMessage[T any](t *testing.T, what string, open func(context.Context) (*connect.ServerStreamForClient[T], error), isInit func(*T) bool) (http.Header, error) {
	ctx, cancel := context.WithCancel(wire.Context(t))
	defer cancel()
	s, err := open(ctx)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	if !s.Receive() {
		return s.ResponseHeader(), s.Err()
	}
	if !isInit(s.Msg()) {
		t.Fatalf("first %s message is not an initialization", what)
	}
	return s.ResponseHeader(), nil
}

// TestRedirectContract sends Watch, WatchDocument and PushPullChanges to a
// node that does not own the document, in redirect mode, and checks every
// field a client or a proxy relies on to reach the owner, then that the
// same call sent to the owner succeeds.
func TestRedirectContract(t *testing.T) {
	c := clustertest.Start(t, 3, clustertest.WithMode(routing.Redirect))
	for _, p := range servertest.Protocols() {
		t.Run(p.String(), func(t *testing.T) {
			docKey := wire.UniqueKey(t, "doc")
			// Bind the document, then attach through its owner.
			if _, err := c.Node(0).Affinity().Owner(wire.Context(t), docKey); err != nil {
				t.Fatalf("bind %s: %v", docKey, err)
			}
			owner := ownerOf(t, c, docKey)
			r := wire.NewReplica(t, owner.Node.Client(p))
			r.MustAttach(docKey)
			r.Edit(1)
			wrong := otherNodes(c, owner.Node)[0]

			for _, call := range redirectCalls {
				t.Run(call.name, func(t *testing.T) {
					header, err := call.send(t, wrong, p, r)
					var cerr *connect.Error
					if !errors.As(err, &cerr) {
						t.Fatalf("%s on a non-owner: got %v, want a Connect error", call.name, err)
					}
					if cerr.Code() != connect.CodeUnavailable {
						t.Errorf("code %s, want unavailable (%v)", cerr.Code(), err)
					}
					// In the response header itself, streams included: that is
					// where a proxy routing by the key reads it.
					key := header.Get(sessionKeyHeader)
					if key != owner.Node.SessionKey() {
						t.Errorf("header %s = %q, want the owner's key %q", sessionKeyHeader, key, owner.Node.SessionKey())
					}
					if want := affinity.SessionKey(owner.Node.Addr()); key != want {
						t.Errorf("session key %q is not base64 of the owner's address %s (%q)", key, owner.Node.Addr(), want)
					}
					info := wire.ErrorInfo(err)
					if info["code"] != "ErrWrongNode" {
						t.Errorf("ErrorInfo code %q, want ErrWrongNode", info["code"])
					}
					if info["session_key"] != key {
						t.Errorf("ErrorInfo session_key %q, want %q", info["session_key"], key)
					}
					addr, perr := affinity.ParseSessionKey(key)
					if perr != nil {
						t.Fatalf("owner's key does not decode: %v", perr)
					}
					if !slices.Contains(wrong.Affinity().Members(), addr) {
						t.Errorf("owner's key names %s, not a member of %v", addr, wrong.Affinity().Members())
					}

					// The same call at the named node succeeds.
					var target *clustertest.Node
					for _, n := range c.Running() {
						if n.Addr() == addr {
							target = n
						}
					}
					if target == nil {
						t.Fatalf("no node listens at %s", addr)
					}
					header, err = call.send(t, target, p, r)
					if err != nil {
						t.Fatalf("%s at the owner: %v", call.name, err)
					}
					if got := header.Get(sessionKeyHeader); got != key {
						t.Errorf("owner's answer: %s = %q, want %q", sessionKeyHeader, got, key)
					}
				})
			}
		})
	}
}

// TestRedirectModeAttachSucceedsAnywhere attaches a document through a node
// that does not own it, in redirect mode: the design promises that
// AttachDocument succeeds wherever it lands and names the owner.
func TestRedirectModeAttachSucceedsAnywhere(t *testing.T) {
	c := clustertest.Start(t, 3, clustertest.WithMode(routing.Redirect))
	docKey := wire.UniqueKey(t, "doc")
	if _, err := c.Node(0).Affinity().Owner(wire.Context(t), docKey); err != nil {
		t.Fatalf("bind %s: %v", docKey, err)
	}
	owner := ownerOf(t, c, docKey)
	wrong := otherNodes(c, owner.Node)[0]
	r := wire.NewReplica(t, wrong.ConnectJSON())
	if _, err := r.Attach(wire.Context(t), docKey); err != nil {
		t.Fatalf("attach through a non-owner in redirect mode: %v (ErrorInfo %v)", err, wire.ErrorInfo(err))
	}
	if got := r.Header.Get(sessionKeyHeader); got != owner.Node.SessionKey() {
		t.Fatalf("attach answer: %s = %q, want the owner's %q", sessionKeyHeader, got, owner.Node.SessionKey())
	}
}

// TestForwardModeRelays sends every document call through a node that does
// not own the document: unary calls and both Watch forms are relayed to the
// owner and answered with the owner's session key, and events published at
// the owner reach the relayed streams.
func TestForwardModeRelays(t *testing.T) {
	for _, p := range []servertest.Protocol{servertest.ConnectJSON, servertest.GRPC} {
		t.Run(p.String(), func(t *testing.T) {
			c := clustertest.Start(t, 3)
			docKey := wire.UniqueKey(t, "doc")
			if _, err := c.Node(0).Affinity().Owner(wire.Context(t), docKey); err != nil {
				t.Fatalf("bind %s: %v", docKey, err)
			}
			owner := ownerOf(t, c, docKey)
			via := otherNodes(c, owner.Node)[0]
			key := owner.Node.SessionKey()

			far := wire.NewReplica(t, via.Client(p))
			far.MustAttach(docKey)
			if got := far.Header.Get(sessionKeyHeader); got != key {
				t.Errorf("relayed attach: %s = %q, want %q", sessionKeyHeader, got, key)
			}
			near := wire.NewReplica(t, owner.Node.Client(p))
			near.MustAttach(docKey)

			w, watchers := watchReady(t, far)
			if got := w.Header().Get(sessionKeyHeader); got != key {
				t.Errorf("relayed Watch: %s = %q, want %q", sessionKeyHeader, got, key)
			}
			if !slices.Contains(watchers, far.ID) {
				t.Errorf("relayed Watch initialization lists %v, want %s in it", watchers, far.ID)
			}
			wd := wire.OpenStream(t, func(ctx context.Context) (*connect.ServerStreamForClient[api.WatchDocumentResponse], error) {
				return via.Client(p).WatchDocument(ctx, connect.NewRequest(&api.WatchDocumentRequest{ClientId: far.ID, DocumentId: far.DocID}))
			})
			if wd.Next(t).GetInitialization() == nil {
				t.Fatalf("relayed WatchDocument did not start with an initialization")
			}
			if got := wd.Header().Get(sessionKeyHeader); got != key {
				t.Errorf("relayed WatchDocument: %s = %q, want %q", sessionKeyHeader, got, key)
			}

			// The owner's client joins and edits: the relayed streams see it.
			nw, _ := watchReady(t, near)
			awaitEvent(t, w, watched, near.ID)
			near.Edit(3)
			near.MustPushPull()
			awaitEvent(t, w, changed, near.ID)
			for {
				ev := wd.Next(t).GetEvent()
				if ev.GetType() == changed && ev.GetPublisher() == near.ID {
					break
				}
			}

			// Relayed PushPull pushes and pulls.
			far.Edit(2)
			far.MustPushPull()
			if got := far.Header.Get(sessionKeyHeader); got != key {
				t.Errorf("relayed PushPull: %s = %q, want %q", sessionKeyHeader, got, key)
			}
			if err := hasPulled(far, near); err != nil {
				t.Fatal(err)
			}
			awaitEvent(t, nw, changed, far.ID)
			near.MustPushPull()
			if err := hasPulled(near, far); err != nil {
				t.Fatal(err)
			}

			// Relayed detach and remove.
			far.NewChange(nil).Operations = nil
			detach, err := via.Client(p).DetachDocument(wire.Context(t), connect.NewRequest(&api.DetachDocumentRequest{
				ClientId: far.ID, DocumentId: far.DocID, ChangePack: far.Pack(),
			}))
			wire.Must(t, err, "relayed detach")
			if got := detach.Header().Get(sessionKeyHeader); got != key {
				t.Errorf("relayed DetachDocument: %s = %q, want %q", sessionKeyHeader, got, key)
			}
			att, err := c.DB().FindAttachment(wire.Context(t), far.ID, far.DocID)
			wire.Must(t, err, "find attachment")
			if att.Status != "detached" {
				t.Errorf("attachment after relayed detach: %s, want detached", att.Status)
			}
			remover := wire.NewReplica(t, via.Client(p))
			remover.MustAttach(docKey)
			pack := remover.Pack()
			pack.IsRemoved = true
			rm, err := via.Client(p).RemoveDocument(wire.Context(t), connect.NewRequest(&api.RemoveDocumentRequest{
				ClientId: remover.ID, DocumentId: remover.DocID, ChangePack: pack,
			}))
			wire.Must(t, err, "relayed remove")
			if !rm.Msg.GetChangePack().GetIsRemoved() {
				t.Errorf("relayed remove answered is_removed=false")
			}
			if got := rm.Header().Get(sessionKeyHeader); got != key {
				t.Errorf("relayed RemoveDocument: %s = %q, want %q", sessionKeyHeader, got, key)
			}
			info, err := c.DB().FindDocument(wire.Context(t), database.DefaultProjectID, remover.DocID)
			wire.Must(t, err, "find document")
			if info.RemovedAt.IsZero() {
				t.Errorf("document not removed after relayed RemoveDocument")
			}
		})
	}
}

// TestOwnerPushPullMakesNoStoreCalls counts the session store calls of the
// owner while a client attached to it runs 200 PushPulls after warming up,
// then those of both nodes while 200 PushPulls are relayed to the owner.
func TestOwnerPushPullMakesNoStoreCalls(t *testing.T) {
	c := clustertest.Start(t, 3)
	docKey := wire.UniqueKey(t, "doc")
	if _, err := c.Node(0).Affinity().Owner(wire.Context(t), docKey); err != nil {
		t.Fatalf("bind %s: %v", docKey, err)
	}
	owner := ownerOf(t, c, docKey).Node
	via := otherNodes(c, owner)[0]
	r := wire.NewReplica(t, owner.ConnectProto())
	r.MustAttach(docKey)
	relayed := wire.NewReplica(t, via.ConnectProto())
	relayed.MustAttach(docKey)
	for range 5 {
		r.Edit(1)
		r.MustPushPull()
		relayed.Edit(1)
		relayed.MustPushPull()
	}
	before, viaBefore := owner.Affinity().StoreCalls(), via.Affinity().StoreCalls()
	const calls = 200
	for range calls {
		r.Edit(1)
		r.MustPushPull()
	}
	if got := owner.Affinity().StoreCalls() - before; got != 0 {
		t.Fatalf("owner made %d session store calls during %d PushPulls, want 0", got, calls)
	}
	if r.Acked != uint32(calls+6) {
		t.Fatalf("acknowledged client_seq %d, want %d", r.Acked, calls+6)
	}
	// A node relaying to a live owner it knows does not ask the store either.
	before = owner.Affinity().StoreCalls()
	for range calls {
		relayed.Edit(1)
		relayed.MustPushPull()
	}
	if got := via.Affinity().StoreCalls() - viaBefore; got != 0 {
		t.Fatalf("forwarding node made %d session store calls during %d relayed PushPulls, want 0", got, calls)
	}
	if got := owner.Affinity().StoreCalls() - before; got != 0 {
		t.Fatalf("owner made %d session store calls during %d relayed PushPulls, want 0", got, calls)
	}
	if err := hasPulled(relayed, r); err != nil {
		t.Fatal(err)
	}
}

// TestForgedSessionKeyIsNeverDialled sends calls to a non-owner (forward
// mode) carrying a session key that names a listener the test controls, or a
// malformed key: the calls are relayed to the real owner and the listener
// never sees a connection.
func TestForgedSessionKeyIsNeverDialled(t *testing.T) {
	c := clustertest.Start(t, 3)
	var lc net.ListenConfig
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	wire.Must(t, err, "listen")
	t.Cleanup(func() { _ = ln.Close() })
	var accepted atomic.Int64
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			_ = conn.Close()
		}
	}()

	docKey := wire.UniqueKey(t, "doc")
	if _, err := c.Node(0).Affinity().Owner(wire.Context(t), docKey); err != nil {
		t.Fatalf("bind %s: %v", docKey, err)
	}
	owner := ownerOf(t, c, docKey).Node
	via := otherNodes(c, owner)[0]
	writer := wire.NewReplica(t, owner.ConnectJSON())
	writer.MustAttach(docKey)

	for _, forged := range []struct{ name, key string }{
		{"non-member", affinity.SessionKey(ln.Addr().String())},
		{"malformed", "not*a*session*key"},
		{"not-host-port", affinity.SessionKey("no port here")},
	} {
		t.Run(forged.name, func(t *testing.T) {
			withKey := connect.WithInterceptors(connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
				return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
					req.Header().Set(sessionKeyHeader, forged.key)
					return next(ctx, req)
				}
			}), forgedStreamKey(forged.key))
			cl := via.Client(servertest.ConnectJSON, withKey)
			r := wire.NewReplica(t, cl)
			r.MustAttach(docKey)
			if got := r.Header.Get(sessionKeyHeader); got != owner.SessionKey() {
				t.Errorf("attach: %s = %q, want the real owner's %q", sessionKeyHeader, got, owner.SessionKey())
			}
			w, _ := watchReady(t, r)
			if got := w.Header().Get(sessionKeyHeader); got != owner.SessionKey() {
				t.Errorf("watch: %s = %q, want the real owner's %q", sessionKeyHeader, got, owner.SessionKey())
			}
			writer.Edit(1)
			writer.MustPushPull()
			awaitEvent(t, w, changed, writer.ID)
			r.Edit(1)
			r.MustPushPull()
			if got := r.Header.Get(sessionKeyHeader); got != owner.SessionKey() {
				t.Errorf("pushpull: %s = %q, want the real owner's %q", sessionKeyHeader, got, owner.SessionKey())
			}
			if err := hasPulled(r, writer); err != nil {
				t.Fatal(err)
			}
			if r.Acked != r.LastSeq {
				t.Errorf("acknowledged %d of %d changes", r.Acked, r.LastSeq)
			}
		})
	}
	if n := accepted.Load(); n != 0 {
		t.Fatalf("the address named by the forged key accepted %d connections, want 0", n)
	}
}

// forgedStreamKey adds the session key header to streaming calls.
func forgedStreamKey(key string) connect.Interceptor { return streamHeader{key: key} }

type streamHeader struct{ key string }

func (s streamHeader) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc { return next }

func (s streamHeader) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		conn := next(ctx, spec)
		conn.RequestHeader().Set(sessionKeyHeader, s.key)
		return conn
	}
}

func (s streamHeader) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

// TestNodeCallsNeedTheClusterSecret calls the node-to-node service and a
// forwarded-looking YorkieService call on the public port without the
// cluster secret, or with a wrong one: both are refused with
// permission_denied, while the right secret is accepted.
func TestNodeCallsNeedTheClusterSecret(t *testing.T) {
	c := clustertest.Start(t, 3)
	docKey := wire.UniqueKey(t, "doc")
	if _, err := c.Node(0).Affinity().Owner(wire.Context(t), docKey); err != nil {
		t.Fatalf("bind %s: %v", docKey, err)
	}
	owner := ownerOf(t, c, docKey).Node
	victim := wire.NewReplica(t, owner.ConnectJSON())
	victim.MustAttach(docKey)
	secret, err := c.Store().ClusterSecret(wire.Context(t))
	wire.Must(t, err, "cluster secret")

	detachIn := func(secretValue, projectID string) error {
		cl := clusterClient(t, owner, secretValue)
		_, err := cl.DetachClientDocument(wire.Context(t), connect.NewRequest(&clusterv1.DetachClientDocumentRequest{
			ClientId: victim.ID, DocumentId: victim.DocID, DocumentKey: docKey, ProjectId: projectID,
		}))
		return err
	}
	detach := func(secretValue string) error { return detachIn(secretValue, database.DefaultProjectID) }
	for _, tc := range []struct{ name, secret string }{{"no secret", ""}, {"wrong secret", "guess"}} {
		t.Run("ClusterService/"+tc.name, func(t *testing.T) {
			if code := connect.CodeOf(detach(tc.secret)); code != connect.CodePermissionDenied {
				t.Fatalf("DetachClientDocument: code %s, want permission_denied", code)
			}
			att, err := c.DB().FindAttachment(wire.Context(t), victim.ID, victim.DocID)
			wire.Must(t, err, "find attachment")
			if att.Status != "attached" {
				t.Fatalf("victim's attachment is %s after a refused call", att.Status)
			}
		})
		t.Run("YorkieService forwarded/"+tc.name, func(t *testing.T) {
			forwarded := connect.WithInterceptors(connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
				return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
					req.Header().Set(routing.HeaderForwardedBy, otherNodes(c, owner)[0].Addr())
					return next(ctx, req)
				}
			}), secretHeader(tc.secret))
			cl := owner.Client(servertest.ConnectJSON, forwarded)
			victim.Edit(1)
			_, err := cl.PushPullChanges(wire.Context(t), victim.PushPullRequest())
			if code := connect.CodeOf(err); code != connect.CodePermissionDenied {
				t.Fatalf("forwarded PushPull without the secret: code %s (%v), want permission_denied", code, err)
			}
		})
	}
	t.Run("ClusterService/no project", func(t *testing.T) {
		// A detach that names no project is refused, never served in the
		// default project.
		if code := connect.CodeOf(detachIn(secret, "")); code != connect.CodeInvalidArgument {
			t.Fatalf("DetachClientDocument without a project: code %s, want invalid_argument", code)
		}
		att, err := c.DB().FindAttachment(wire.Context(t), victim.ID, victim.DocID)
		wire.Must(t, err, "find attachment")
		if att.Status != "attached" {
			t.Fatalf("victim's attachment is %s after a refused call", att.Status)
		}
	})
	t.Run("ClusterService/right secret", func(t *testing.T) {
		wire.Must(t, detach(secret), "DetachClientDocument with the cluster secret")
		att, err := c.DB().FindAttachment(wire.Context(t), victim.ID, victim.DocID)
		wire.Must(t, err, "find attachment")
		if att.Status != "detached" {
			t.Fatalf("attachment is %s after an authentic detach, want detached", att.Status)
		}
	})
}
