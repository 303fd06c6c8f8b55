package clustertest_test

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/clustertest"
)

// waitTimeout bounds every wait for an answer, a stream message or a state
// of the cluster; it only ends runs that are already broken.
const waitTimeout = 10 * time.Second

// sessionKeyHeader is the response header naming a document's owner.
const sessionKeyHeader = "x-session-key"

var keySeq atomic.Int64

// uniqueKey returns a client or document key unique in the test binary.
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
	if len(name) > 60 {
		name = name[len(name)-60:]
	}
	return fmt.Sprintf("%s-%s-%d", prefix, name, keySeq.Add(1))
}

// testCtx returns a context ending with the test or after waitTimeout.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	t.Cleanup(cancel)
	return ctx
}

func must(t testing.TB, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// errorInfo returns the metadata of a Connect error's ErrorInfo detail.
func errorInfo(err error) map[string]string {
	var cerr *connect.Error
	if !errors.As(err, &cerr) {
		return nil
	}
	for _, d := range cerr.Details() {
		v, derr := d.Value()
		if derr != nil {
			continue
		}
		if info, ok := v.(*errdetails.ErrorInfo); ok {
			return info.GetMetadata()
		}
	}
	return nil
}

// eventually calls f until it returns nil, failing t with f's last error
// after waitTimeout.
func eventually(t testing.TB, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not done within %s: %v", what, waitTimeout, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// retryable reports whether a client (the SDK) would send the call again.
func retryable(err error) bool {
	switch connect.CodeOf(err) {
	case connect.CodeUnavailable, connect.CodeUnknown, connect.CodeCanceled, connect.CodeResourceExhausted:
		return true
	}
	return false
}

// replica plays one SDK client of one document: it numbers its changes,
// re-sends all unacknowledged ones on every PushPull, keeps the highest
// checkpoint, and records what it pulled. Its calls go through c, which a
// test changes to move the client to another node.
type replica struct {
	t     testing.TB
	c     v1connect.YorkieServiceClient
	id    string
	actor []byte

	docKey    string
	docID     string
	lamport   int64
	lastSeq   uint32
	acked     uint32
	serverSeq int64
	pending   []*api.Change

	// pulled holds the changes of other clients received, by "actor/seq".
	pulled map[string]*api.Change
	// header is the response header of the last successful call.
	header http.Header
}

// newReplica activates a client with a fresh key through c.
func newReplica(t testing.TB, c v1connect.YorkieServiceClient) *replica {
	t.Helper()
	resp, err := c.ActivateClient(testCtx(t), connect.NewRequest(&api.ActivateClientRequest{ClientKey: uniqueKey(t, "client")}))
	must(t, err, "activate client")
	id := resp.Msg.GetClientId()
	actor, err := hex.DecodeString(id)
	must(t, err, "decode client id")
	return &replica{t: t, c: c, id: id, actor: actor, pulled: map[string]*api.Change{}}
}

// changeKey names a change by its actor and client_seq.
func changeKey(ch *api.Change) string {
	return fmt.Sprintf("%s/%d", hex.EncodeToString(ch.GetId().GetActorId()), ch.GetId().GetClientSeq())
}

// record adds a local change with a Set operation, or a presence PUT when
// presence is not nil.
func (r *replica) record(presence map[string]string) *api.Change {
	r.lamport++
	r.lastSeq++
	ch := &api.Change{Id: &api.ChangeID{
		ClientSeq:     r.lastSeq,
		Lamport:       r.lamport,
		ActorId:       r.actor,
		VersionVector: &api.VersionVector{Vector: map[string]int64{base64.StdEncoding.EncodeToString(r.actor): r.lamport}},
	}}
	if presence != nil {
		ch.PresenceChange = &api.PresenceChange{Type: api.PresenceChange_CHANGE_TYPE_PUT, Presence: &api.Presence{Data: presence}}
	} else {
		ch.Operations = []*api.Operation{{Body: &api.Operation_Set_{Set: &api.Operation_Set{
			ParentCreatedAt: &api.TimeTicket{},
			Key:             fmt.Sprintf("k%d", r.lastSeq),
			Value: &api.JSONElementSimple{
				CreatedAt: &api.TimeTicket{Lamport: r.lamport, ActorId: r.actor},
				Type:      api.ValueType_VALUE_TYPE_INTEGER,
				Value:     []byte{byte(r.lastSeq), byte(r.lastSeq >> 8), 0, 0},
			},
			ExecutedAt: &api.TimeTicket{Lamport: r.lamport, ActorId: r.actor},
		}}}}
	}
	r.pending = append(r.pending, ch)
	return ch
}

// edit records n operation changes.
func (r *replica) edit(n int) {
	for range n {
		r.record(nil)
	}
}

func (r *replica) pack() *api.ChangePack {
	return &api.ChangePack{
		DocumentKey: r.docKey,
		Checkpoint:  &api.Checkpoint{ServerSeq: r.serverSeq, ClientSeq: r.acked + uint32(len(r.pending))},
		Changes:     r.pending,
	}
}

// absorb applies an answer: acknowledgement, checkpoint, pulled changes.
func (r *replica) absorb(p *api.ChangePack) error {
	if p == nil {
		return errors.New("answer has no change pack")
	}
	cp := p.GetCheckpoint()
	r.acked = max(r.acked, cp.GetClientSeq())
	r.serverSeq = max(r.serverSeq, cp.GetServerSeq())
	kept := r.pending[:0]
	for _, ch := range r.pending {
		if ch.GetId().GetClientSeq() > r.acked {
			kept = append(kept, ch)
		}
	}
	r.pending = kept
	for _, ch := range p.GetChanges() {
		if hex.EncodeToString(ch.GetId().GetActorId()) == r.id {
			return fmt.Errorf("client %s was sent its own change %d", r.id, ch.GetId().GetClientSeq())
		}
		if ch.GetId().GetVersionVector() == nil {
			return fmt.Errorf("change %s has no version vector", changeKey(ch))
		}
		r.lamport = max(r.lamport, ch.GetId().GetLamport())
		r.pulled[changeKey(ch)] = ch
	}
	return nil
}

// attach attaches docKey with the SDK's initial presence change.
func (r *replica) attach(ctx context.Context, docKey string) error {
	r.docKey = docKey
	r.record(map[string]string{"name": `"` + r.id + `"`})
	resp, err := r.c.AttachDocument(ctx, connect.NewRequest(&api.AttachDocumentRequest{ClientId: r.id, ChangePack: r.pack()}))
	if err != nil {
		return err
	}
	r.docID = resp.Msg.GetDocumentId()
	r.header = resp.Header()
	return r.absorb(resp.Msg.GetChangePack())
}

func (r *replica) mustAttach(docKey string) {
	r.t.Helper()
	must(r.t, r.attach(testCtx(r.t), docKey), "attach "+docKey)
	if r.docID == "" {
		r.t.Fatalf("attach %s gave no document ID", docKey)
	}
}

// pushPullRequest is the PushPull the replica would send now.
func (r *replica) pushPullRequest() *connect.Request[api.PushPullChangesRequest] {
	return connect.NewRequest(&api.PushPullChangesRequest{ClientId: r.id, DocumentId: r.docID, ChangePack: r.pack()})
}

// pushPull sends the pending changes and absorbs the answer.
func (r *replica) pushPull(ctx context.Context) error {
	resp, err := r.c.PushPullChanges(ctx, r.pushPullRequest())
	if err != nil {
		return err
	}
	r.header = resp.Header()
	return r.absorb(resp.Msg.GetChangePack())
}

func (r *replica) mustPushPull() {
	r.t.Helper()
	must(r.t, r.pushPull(testCtx(r.t)), "pushpull")
}

// sync retries pushPull, as the SDK does on retryable errors, until every
// change is acknowledged; it fails t on a non-retryable error.
func (r *replica) sync(what string) {
	r.t.Helper()
	eventually(r.t, what, func() error {
		err := r.pushPull(testCtx(r.t))
		if err != nil && !retryable(err) {
			r.t.Fatalf("%s: non-retryable error: %v", what, err)
		}
		if err == nil && len(r.pending) > 0 {
			return fmt.Errorf("%d changes still unacknowledged", len(r.pending))
		}
		return err
	})
}

// hasPulled reports whether the replica received every change of other
// (operation and presence changes alike) up to other's acknowledged seq.
func (r *replica) hasPulled(other *replica) error {
	for seq := uint32(1); seq <= other.acked; seq++ {
		k := fmt.Sprintf("%s/%d", other.id, seq)
		if _, ok := r.pulled[k]; !ok {
			return fmt.Errorf("client %s has not received change %s", r.id, k)
		}
	}
	return nil
}

// watchRequest is the Watch the SDK sends for the replica's document.
func (r *replica) watchRequest() *connect.Request[api.WatchRequest] {
	return connect.NewRequest(&api.WatchRequest{
		ClientId: r.id,
		Resources: []*api.ResourceDescriptor{{Resource: &api.ResourceDescriptor_Document{
			Document: &api.DocumentDescriptor{DocumentId: r.docID},
		}}},
	})
}

// watch opens the replica's Watch stream through its client.
func (r *replica) watch(t testing.TB) *stream[api.WatchResponse] {
	t.Helper()
	return openStream(t, func(ctx context.Context) (*connect.ServerStreamForClient[api.WatchResponse], error) {
		return r.c.Watch(ctx, r.watchRequest())
	})
}

// watchReady opens the Watch stream and waits for its initialization.
func (r *replica) watchReady(t testing.TB) (*stream[api.WatchResponse], []string) {
	t.Helper()
	s := r.watch(t)
	init := s.next(t).GetInitialization()
	if init == nil {
		t.Fatalf("first Watch message of %s is not an initialization", r.id)
	}
	return s, init.GetResourceInits()[0].GetDocumentInit().GetClientIds()
}

// stream reads a server stream in the background so a test can wait for
// its messages or its end with a deadline.
type stream[T any] struct {
	msgs   chan *T
	done   chan struct{}
	err    error
	header http.Header
	ended  time.Time
	cancel context.CancelFunc

	once sync.Once
}

func openStream[T any](t testing.TB, open func(ctx context.Context) (*connect.ServerStreamForClient[T], error)) *stream[T] {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	up, err := open(ctx)
	if err != nil {
		cancel()
		t.Fatalf("open stream: %v", err)
	}
	s := &stream[T]{msgs: make(chan *T, 256), done: make(chan struct{}), cancel: cancel}
	t.Cleanup(s.close)
	go func() {
		defer close(s.done)
		first := true
		for up.Receive() {
			if first {
				s.header = up.ResponseHeader().Clone()
				first = false
			}
			s.msgs <- up.Msg()
		}
		s.err = up.Err()
		if first {
			s.header = up.ResponseHeader().Clone()
		}
		s.ended = time.Now()
		_ = up.Close()
	}()
	return s
}

func (s *stream[T]) close() {
	s.once.Do(s.cancel)
	<-s.done
}

// next returns the next message or fails t.
func (s *stream[T]) next(t testing.TB) *T {
	t.Helper()
	select {
	case m := <-s.msgs:
		return m
	case <-s.done:
		select {
		case m := <-s.msgs:
			return m
		default:
		}
		t.Fatalf("stream ended while a message was expected: %v", s.err)
	case <-time.After(waitTimeout):
		t.Fatalf("no stream message within %s", waitTimeout)
	}
	return nil
}

// end waits for the stream to end on the server's initiative and returns
// its error and when it ended.
func (s *stream[T]) end(t testing.TB) (error, time.Time) {
	t.Helper()
	select {
	case <-s.done:
		return s.err, s.ended
	case <-time.After(waitTimeout):
		t.Fatalf("stream did not end within %s", waitTimeout)
	}
	return nil, time.Time{}
}

// docEvent returns the next document event of a Watch stream.
func nextDocEvent(t testing.TB, s *stream[api.WatchResponse]) *api.DocEvent {
	t.Helper()
	m := s.next(t)
	ev := m.GetEvent().GetDocEvent().GetEvent()
	if ev == nil {
		t.Fatalf("got Watch message %v, want a document event", m)
	}
	return ev
}

// awaitEvent reads a Watch stream until an event of the type from the
// publisher arrives, skipping others, or fails t.
func awaitEvent(t testing.TB, s *stream[api.WatchResponse], typ api.DocEventType, publisher string) {
	t.Helper()
	for {
		ev := nextDocEvent(t, s)
		if ev.GetType() == typ && ev.GetPublisher() == publisher {
			return
		}
	}
}

// findEvent reads a Watch stream until an event of the type from the
// publisher arrives, skipping others; it returns an error if none comes
// within d or the stream ends first.
func findEvent(s *stream[api.WatchResponse], typ api.DocEventType, publisher string, d time.Duration) error {
	timeout := time.After(d)
	for {
		select {
		case m := <-s.msgs:
			ev := m.GetEvent().GetDocEvent().GetEvent()
			if ev.GetType() == typ && ev.GetPublisher() == publisher {
				return nil
			}
		case <-s.done:
			if len(s.msgs) > 0 {
				continue
			}
			return fmt.Errorf("stream ended (%v) before %s from %s", s.err, typ, publisher)
		case <-timeout:
			return fmt.Errorf("no %s from %s within %s", typ, publisher, d)
		}
	}
}

// checkLog reads the document's change log from the shared database and
// fails t unless its server_seq values run 1..n without gap or duplicate
// and no change of a client is stored twice. It returns the log by change key.
func checkLog(t testing.TB, db database.Database, docID string) map[string]*database.Change {
	t.Helper()
	changes, err := db.FindChanges(testCtx(t), docID, 1, math.MaxInt64)
	must(t, err, "read change log")
	byKey := make(map[string]*database.Change, len(changes))
	for i, ch := range changes {
		if ch.ServerSeq != int64(i+1) {
			t.Fatalf("change log of %s: entry %d has server_seq %d, want %d", docID, i, ch.ServerSeq, i+1)
		}
		k := fmt.Sprintf("%s/%d", ch.ActorID, ch.ClientSeq)
		if prev, ok := byKey[k]; ok {
			t.Fatalf("change log of %s: change %s stored twice, at %d and %d", docID, k, prev.ServerSeq, ch.ServerSeq)
		}
		byKey[k] = ch
	}
	return byKey
}

// checkStored fails t unless every acknowledged change of each replica is in
// the log.
func checkStored(t testing.TB, log map[string]*database.Change, replicas ...*replica) {
	t.Helper()
	for _, r := range replicas {
		for seq := uint32(1); seq <= r.acked; seq++ {
			if _, ok := log[fmt.Sprintf("%s/%d", r.id, seq)]; !ok {
				t.Fatalf("acknowledged change %s/%d of client %s is not in the log", r.id, seq, r.id)
			}
		}
	}
}

// nodeOf returns the running node other than the ones excluded.
func otherNodes(c *clustertest.Cluster, exclude ...*clustertest.Node) []*clustertest.Node {
	var out []*clustertest.Node
next:
	for _, n := range c.Running() {
		for _, x := range exclude {
			if n == x {
				continue next
			}
		}
		out = append(out, n)
	}
	return out
}

// ownerOf returns the document's owner, failing t if it has none.
func ownerOf(t testing.TB, c *clustertest.Cluster, docKey string) clustertest.Owner {
	t.Helper()
	o, err := c.OwnerOf(testCtx(t), docKey)
	must(t, err, "owner of "+docKey)
	return o
}
