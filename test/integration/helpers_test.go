package integration_test

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/servertest"
)

// waitTimeout bounds every wait for a server answer or stream message.
const waitTimeout = 10 * time.Second

// keySeq makes client and document keys unique within the test binary.
var keySeq atomic.Int64

// uniqueKey returns a document or client key valid for Yorkie, derived from
// the test name.
func uniqueKey(t testing.TB, prefix string) string {
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			return r
		case r >= 'A' && r <= 'Z':
			return r + ('a' - 'A')
		}
		return '-'
	}, t.Name())
	if len(name) > 80 {
		name = name[len(name)-80:]
	}
	return fmt.Sprintf("%s-%s-%d", prefix, name, keySeq.Add(1))
}

// testCtx returns a context that ends with the test or after waitTimeout.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	t.Cleanup(cancel)
	return ctx
}

// wantError fails t unless err is a Connect error with the code and an
// ErrorInfo detail whose metadata "code" is name.
func wantError(t testing.TB, err error, code connect.Code, name string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %s %s", code, name)
	}
	var cerr *connect.Error
	if !errors.As(err, &cerr) {
		t.Fatalf("got %T %v, want a connect error %s %s", err, err, code, name)
	}
	if cerr.Code() != code {
		t.Fatalf("got code %s (%v), want %s %s", cerr.Code(), err, code, name)
	}
	if got := errorInfoCode(cerr); got != name {
		t.Fatalf("got ErrorInfo code %q (%v), want %q", got, err, name)
	}
}

// errorInfoCode returns the metadata "code" of the error's ErrorInfo detail.
func errorInfoCode(cerr *connect.Error) string {
	for _, d := range cerr.Details() {
		v, err := d.Value()
		if err != nil {
			continue
		}
		if info, ok := v.(*errdetails.ErrorInfo); ok {
			return info.GetMetadata()["code"]
		}
	}
	return ""
}

// must fails t on err.
func must(t testing.TB, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// forEachProtocol runs f once per wire protocol against a fresh server
// configured by opts.
func forEachProtocol(t *testing.T, f func(t *testing.T, c v1connect.YorkieServiceClient, srv *server.Server), opts ...func(*server.Config)) {
	for _, p := range servertest.Protocols() {
		t.Run(p.String(), func(t *testing.T) {
			srv := servertest.Start(t, opts...)
			f(t, servertest.Client(t, srv, p), srv)
		})
	}
}

// replica plays a client the way the JS SDK does: it numbers its changes,
// re-sends every unacknowledged change on each PushPull, and keeps the
// highest checkpoint it was sent.
type replica struct {
	t       testing.TB
	c       v1connect.YorkieServiceClient
	key     string
	id      string
	actor   []byte
	docKey  string
	docID   string
	lamport int64
	// lastSeq is the client_seq of the newest local change.
	lastSeq uint32
	// acked is the highest client_seq the server acknowledged.
	acked     uint32
	serverSeq int64
	pending   []*api.Change
	// generation counts the replica's attachments; every change it makes is
	// labelled with it, so a change of an earlier attachment coming back (which
	// a re-attaching client needs) is told apart from one it just sent.
	generation int
	// seen counts changes pulled, by actor hex and client_seq.
	seen map[string]int
	// byLabel counts changes pulled, by label (see label).
	byLabel map[string]int
}

// newReplica activates a client with a fresh key.
func newReplica(t testing.TB, c v1connect.YorkieServiceClient) *replica {
	t.Helper()
	key := uniqueKey(t, "client")
	resp, err := c.ActivateClient(testCtx(t), connect.NewRequest(&api.ActivateClientRequest{ClientKey: key}))
	must(t, err, "activate client")
	id := resp.Msg.GetClientId()
	actor, err := hex.DecodeString(id)
	must(t, err, "decode client id "+id)
	return &replica{t: t, c: c, key: key, id: id, actor: actor, seen: map[string]int{}, byLabel: map[string]int{}}
}

// vvKey is the version-vector key of an actor: standard base64 of its bytes.
func vvKey(actor []byte) string { return base64.StdEncoding.EncodeToString(actor) }

// newChange records a local change: with a presence PUT when presence is set,
// otherwise with one Set operation.
func (r *replica) newChange(presence map[string]string) *api.Change {
	r.lamport++
	r.lastSeq++
	ch := &api.Change{Message: r.label(r.generation, r.lastSeq), Id: &api.ChangeID{
		ClientSeq:     r.lastSeq,
		Lamport:       r.lamport,
		ActorId:       r.actor,
		VersionVector: &api.VersionVector{Vector: map[string]int64{vvKey(r.actor): r.lamport}},
	}}
	if presence != nil {
		ch.PresenceChange = &api.PresenceChange{
			Type:     api.PresenceChange_CHANGE_TYPE_PUT,
			Presence: &api.Presence{Data: presence},
		}
	} else {
		ch.Operations = []*api.Operation{{Body: &api.Operation_Set_{Set: &api.Operation_Set{
			ParentCreatedAt: &api.TimeTicket{},
			Key:             fmt.Sprintf("k%d", r.lastSeq),
			Value: &api.JSONElementSimple{
				CreatedAt: &api.TimeTicket{Lamport: r.lamport, ActorId: r.actor},
				Type:      api.ValueType_VALUE_TYPE_INTEGER,
				Value:     []byte{0, 0, 0, byte(r.lastSeq)},
			},
			ExecutedAt: &api.TimeTicket{Lamport: r.lamport, ActorId: r.actor},
		}}}}
	}
	r.pending = append(r.pending, ch)
	return ch
}

// label names a change of the replica: attachment generation and client_seq.
func (r *replica) label(generation int, seq uint32) string {
	return fmt.Sprintf("%s#%d/%d", r.id, generation, seq)
}

// edit records n operation changes.
func (r *replica) edit(n int) {
	for range n {
		r.newChange(nil)
	}
}

// pack builds the change pack the SDK would send now.
func (r *replica) pack() *api.ChangePack {
	return &api.ChangePack{
		DocumentKey: r.docKey,
		Checkpoint:  &api.Checkpoint{ServerSeq: r.serverSeq, ClientSeq: r.acked + uint32(len(r.pending))},
		Changes:     r.pending,
	}
}

// absorb applies a response pack: acknowledgement, checkpoint and pulled
// changes (which it checks are not the replica's own).
func (r *replica) absorb(p *api.ChangePack) {
	r.t.Helper()
	if p == nil {
		r.t.Fatalf("response has no change pack")
	}
	cp := p.GetCheckpoint()
	if cp.GetClientSeq() > r.acked {
		r.acked = cp.GetClientSeq()
	}
	if cp.GetServerSeq() > r.serverSeq {
		r.serverSeq = cp.GetServerSeq()
	}
	kept := r.pending[:0]
	for _, ch := range r.pending {
		if ch.GetId().GetClientSeq() > r.acked {
			kept = append(kept, ch)
		}
	}
	r.pending = kept
	for _, ch := range p.GetChanges() {
		actor := hex.EncodeToString(ch.GetId().GetActorId())
		if actor == r.id {
			if strings.HasPrefix(ch.GetMessage(), fmt.Sprintf("%s#%d/", r.id, r.generation)) {
				r.t.Fatalf("client %s was sent back its own change %d", r.id, ch.GetId().GetClientSeq())
			}
		}
		r.byLabel[ch.GetMessage()]++
		if ch.GetId().GetVersionVector() == nil {
			r.t.Fatalf("change %s/%d has no version vector", actor, ch.GetId().GetClientSeq())
		}
		if l := ch.GetId().GetLamport(); l > r.lamport {
			r.lamport = l
		}
		r.seen[fmt.Sprintf("%s/%d", actor, ch.GetId().GetClientSeq())]++
	}
}

// attach attaches the document with the SDK's initial presence change. Like
// the SDK's new Document, a new attachment starts from empty checkpoints and
// numbers its changes from 1 again.
func (r *replica) attach(ctx context.Context, docKey string) (*api.AttachDocumentResponse, error) {
	r.generation++
	r.lastSeq, r.acked, r.serverSeq, r.lamport, r.pending = 0, 0, 0, 0, nil
	r.docKey = docKey
	r.newChange(map[string]string{"name": `"` + r.id + `"`})
	resp, err := r.c.AttachDocument(ctx, connect.NewRequest(&api.AttachDocumentRequest{
		ClientId:   r.id,
		ChangePack: r.pack(),
	}))
	if err != nil {
		return nil, err
	}
	r.docID = resp.Msg.GetDocumentId()
	r.absorb(resp.Msg.GetChangePack())
	return resp.Msg, nil
}

// mustAttach attaches docKey or fails the test.
func (r *replica) mustAttach(docKey string) {
	r.t.Helper()
	_, err := r.attach(testCtx(r.t), docKey)
	must(r.t, err, "attach "+docKey)
	if r.docID == "" {
		r.t.Fatalf("attach %s returned no document ID", docKey)
	}
}

// pushPull sends the pending changes and absorbs the answer.
func (r *replica) pushPull(ctx context.Context, pushOnly bool) (*api.ChangePack, error) {
	resp, err := r.c.PushPullChanges(ctx, connect.NewRequest(&api.PushPullChangesRequest{
		ClientId:   r.id,
		DocumentId: r.docID,
		ChangePack: r.pack(),
		PushOnly:   pushOnly,
	}))
	if err != nil {
		return nil, err
	}
	r.absorb(resp.Msg.GetChangePack())
	return resp.Msg.GetChangePack(), nil
}

// mustPushPull runs pushPull or fails the test.
func (r *replica) mustPushPull() *api.ChangePack {
	r.t.Helper()
	p, err := r.pushPull(testCtx(r.t), false)
	must(r.t, err, "pushpull")
	return p
}

// detach detaches the document with a presence CLEAR change, like the SDK.
func (r *replica) detach(ctx context.Context) (*api.ChangePack, error) {
	ch := r.newChange(nil)
	ch.Operations = nil
	ch.PresenceChange = &api.PresenceChange{Type: api.PresenceChange_CHANGE_TYPE_CLEAR}
	resp, err := r.c.DetachDocument(ctx, connect.NewRequest(&api.DetachDocumentRequest{
		ClientId:   r.id,
		DocumentId: r.docID,
		ChangePack: r.pack(),
	}))
	if err != nil {
		return nil, err
	}
	r.absorb(resp.Msg.GetChangePack())
	return resp.Msg.GetChangePack(), nil
}

// watcher reads a Watch (or WatchDocument) stream in the background so a test
// can wait for the next message with a deadline.
type watcher[T any] struct {
	msgs   chan *T
	done   chan struct{}
	err    error
	cancel context.CancelFunc
}

// startWatch opens a stream with open and starts reading it.
func startWatch[T any](t testing.TB, open func(ctx context.Context) (*connect.ServerStreamForClient[T], error)) *watcher[T] {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stream, err := open(ctx)
	if err != nil {
		cancel()
		t.Fatalf("open watch stream: %v", err)
	}
	w := &watcher[T]{msgs: make(chan *T, 64), done: make(chan struct{}), cancel: cancel}
	t.Cleanup(w.close)
	go func() {
		defer close(w.done)
		for stream.Receive() {
			w.msgs <- stream.Msg()
		}
		w.err = stream.Err()
		_ = stream.Close()
	}()
	return w
}

// close ends the stream from the client side.
func (w *watcher[T]) close() {
	w.cancel()
	<-w.done
}

// next returns the next message, failing t if none comes in time or the
// stream ends.
func (w *watcher[T]) next(t testing.TB) *T {
	t.Helper()
	select {
	case m := <-w.msgs:
		return m
	case <-w.done:
		select {
		case m := <-w.msgs:
			return m
		default:
		}
		t.Fatalf("watch stream ended while a message was expected: %v", w.err)
	case <-time.After(waitTimeout):
		t.Fatalf("no watch message within %s", waitTimeout)
	}
	return nil
}

// end waits for the stream to end and returns its error.
func (w *watcher[T]) end(t testing.TB) error {
	t.Helper()
	select {
	case <-w.done:
		return w.err
	case <-time.After(waitTimeout):
		t.Fatalf("watch stream did not end within %s", waitTimeout)
	}
	return nil
}

// watch opens a Watch stream for the replica's document.
func (r *replica) watch(t testing.TB) *watcher[api.WatchResponse] {
	t.Helper()
	return startWatch(t, func(ctx context.Context) (*connect.ServerStreamForClient[api.WatchResponse], error) {
		return r.c.Watch(ctx, connect.NewRequest(&api.WatchRequest{
			ClientId: r.id,
			Resources: []*api.ResourceDescriptor{{Resource: &api.ResourceDescriptor_Document{
				Document: &api.DocumentDescriptor{DocumentId: r.docID},
			}}},
		}))
	})
}

// watchDocument opens a deprecated WatchDocument stream for the document.
func (r *replica) watchDocument(t testing.TB) *watcher[api.WatchDocumentResponse] {
	t.Helper()
	return startWatch(t, func(ctx context.Context) (*connect.ServerStreamForClient[api.WatchDocumentResponse], error) {
		return r.c.WatchDocument(ctx, connect.NewRequest(&api.WatchDocumentRequest{
			ClientId:   r.id,
			DocumentId: r.docID,
		}))
	})
}

// docEvent returns the document event of a Watch message, failing t if the
// message is something else.
func docEvent(t testing.TB, docID string, m *api.WatchResponse) *api.DocEvent {
	t.Helper()
	ev := m.GetEvent().GetDocEvent()
	if ev == nil {
		t.Fatalf("got watch message %v, want a document event", m)
	}
	if ev.GetDocumentId() != docID {
		t.Fatalf("event for document %q, want %q", ev.GetDocumentId(), docID)
	}
	return ev.GetEvent()
}

// wantEvent fails t unless ev has the type and publisher.
func wantEvent(t testing.TB, ev *api.DocEvent, typ api.DocEventType, publisher string) {
	t.Helper()
	if ev.GetType() != typ || ev.GetPublisher() != publisher {
		t.Fatalf("got event %s from %s, want %s from %s", ev.GetType(), ev.GetPublisher(), typ, publisher)
	}
}
