package wire

import (
	"context"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"connectrpc.com/connect"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
	"github.com/yorkie-affinity/yorkie/server/servertest/sdksim"
)

// Replica plays one SDK client of one document over the wire: its
// sdksim.Client numbers the changes, keeps every change the server has not
// acknowledged and sends them all again on each PushPull, and keeps the
// highest checkpoint it was given; the Replica adds the calls and records
// what it pulled. Its state is exported so that a test can stage what a
// misbehaving or unlucky client would send. It is used by one goroutine at a
// time.
type Replica struct {
	// Client is the document-side state: ID, Actor, DocKey, the clocks and
	// the pending changes.
	sdksim.Client

	// T is the test the replica belongs to; MustAttach and MustPushPull fail
	// it, and so does a bad answer when FailFast is set.
	T testing.TB
	// C is the server the calls go through; a test changes it to move the
	// client to another server.
	C v1connect.YorkieServiceClient
	// FailFast makes an answer that breaks the protocol (see Absorb) fail T at
	// once instead of being returned, so that a test expecting a call to fail
	// cannot take it for the server's refusal.
	FailFast bool

	// Key is the client's key.
	Key string
	// DocID names the attached document.
	DocID string

	// Generation counts the replica's attachments; every change is labelled
	// with it (see Label), so that a change of an earlier attachment coming
	// back, which a re-attaching client needs, is told apart from one it just
	// sent.
	Generation int

	// Pulled holds the last copy of every change pulled, by ChangeKey.
	Pulled map[string]*api.Change
	// Seen counts the changes pulled, by ChangeKey.
	Seen map[string]int
	// ByLabel counts the changes pulled, by their label (the message).
	ByLabel map[string]int
	// Header is the response header of the last successful call.
	Header http.Header
}

// Activate activates a client with key through c.
func Activate(ctx context.Context, c v1connect.YorkieServiceClient, key string) (*Replica, error) {
	resp, err := c.ActivateClient(ctx, connect.NewRequest(&api.ActivateClientRequest{ClientKey: key}))
	if err != nil {
		return nil, fmt.Errorf("activate client %q: %w", key, err)
	}
	state, err := sdksim.New(resp.Msg.GetClientId())
	if err != nil {
		return nil, fmt.Errorf("activate client %q: %w", key, err)
	}
	return &Replica{Client: *state, C: c, Key: key, Header: resp.Header()}, nil
}

// NewReplica activates a client of test t with a fresh key through c, failing
// t if it cannot.
func NewReplica(t testing.TB, c v1connect.YorkieServiceClient) *Replica {
	t.Helper()
	r, err := Activate(Context(t), c, UniqueKey(t, "client"))
	Must(t, err, "activate client")
	r.T = t
	return r
}

// ChangeKey names a change by its actor (hex) and client_seq.
func ChangeKey(ch *api.Change) string { return sdksim.ChangeKey(ch) }

// Label is the message of the replica's change with client_seq seq made in
// attachment generation.
func (r *Replica) Label(generation int, seq uint32) string {
	return fmt.Sprintf("%s#%d/%d", r.ID, generation, seq)
}

// SetKey is the root key the replica's operation change with client_seq seq
// sets, so the document's keys name every change that made it in.
func (r *Replica) SetKey(seq uint32) string { return fmt.Sprintf("%s-%d", r.ID, seq) }

// NewChange records a local change the way the SDK builds one (see
// sdksim.Client): a presence PUT when presence is not nil and otherwise one
// Set of SetKey(client_seq) on the root object, labelled with Label.
func (r *Replica) NewChange(presence map[string]string) *api.Change {
	var ch *api.Change
	if presence != nil {
		ch = r.NewPresence(presence)
	} else {
		ch = r.NewSet(r.SetKey(r.LastSeq + 1))
	}
	ch.Message = r.Label(r.Generation, r.LastSeq)
	return ch
}

// RootTicket is the creation ticket of a document's root object, as the SDK
// writes it: lamport 0 and the all-zero initial actor.
func RootTicket() *api.TimeTicket { return sdksim.RootTicket() }

// Edit records n operation changes.
func (r *Replica) Edit(n int) {
	for range n {
		r.NewChange(nil)
	}
}

// Absorb takes in an answer's change pack (see sdksim.Client.Absorb) and
// records what it pulled. Besides what sdksim reports, it reports a pulled
// change the replica sent in its current attachment.
func (r *Replica) Absorb(p *api.ChangePack) error {
	if err := r.absorb(p); err != nil {
		if r.FailFast && r.T != nil {
			r.T.Helper()
			r.T.Fatalf("%v", err)
		}
		return err
	}
	return nil
}

func (r *Replica) absorb(p *api.ChangePack) error {
	pulled, absorbErr := r.Client.Absorb(p)
	if r.Pulled == nil {
		r.Pulled = map[string]*api.Change{}
	}
	if r.Seen == nil {
		r.Seen = map[string]int{}
	}
	if r.ByLabel == nil {
		r.ByLabel = map[string]int{}
	}
	own := fmt.Sprintf("%s#%d/", r.ID, r.Generation)
	for _, ch := range pulled {
		if hex.EncodeToString(ch.GetId().GetActorId()) == r.ID && strings.HasPrefix(ch.GetMessage(), own) {
			return fmt.Errorf("client %s: was sent back its own change %d", r.ID, ch.GetId().GetClientSeq())
		}
		key := ChangeKey(ch)
		r.ByLabel[ch.GetMessage()]++
		r.Seen[key]++
		r.Pulled[key] = ch
	}
	return absorbErr
}

// Attach attaches docKey with the SDK's initial presence change, which names
// the client.
func (r *Replica) Attach(ctx context.Context, docKey string) (*api.AttachDocumentResponse, error) {
	return r.AttachWith(ctx, docKey, map[string]string{"name": `"` + r.ID + `"`})
}

// AttachWith attaches docKey with presence as the initial presence change,
// or with no change at all when presence is nil (a pure read of the whole
// document). Like the SDK's new Document, an attachment starts from empty
// checkpoints and numbers its changes from 1 again.
func (r *Replica) AttachWith(ctx context.Context, docKey string, presence map[string]string) (*api.AttachDocumentResponse, error) {
	r.Generation++
	r.Attached(docKey)
	if presence != nil {
		r.NewChange(presence)
	}
	resp, err := r.C.AttachDocument(ctx, connect.NewRequest(&api.AttachDocumentRequest{
		ClientId:   r.ID,
		ChangePack: r.Pack(),
	}))
	if err != nil {
		return nil, fmt.Errorf("client %s: attach %q: %w", r.ID, docKey, err)
	}
	r.DocID = resp.Msg.GetDocumentId()
	r.Header = resp.Header()
	if err := r.Absorb(resp.Msg.GetChangePack()); err != nil {
		return nil, err
	}
	return resp.Msg, nil
}

// MustAttach attaches docKey or fails T.
func (r *Replica) MustAttach(docKey string) {
	r.T.Helper()
	_, err := r.Attach(Context(r.T), docKey)
	Must(r.T, err, "attach "+docKey)
	if r.DocID == "" {
		r.T.Fatalf("attach %s returned no document ID", docKey)
	}
}

// PushPullRequest is the PushPull the replica would send now.
func (r *Replica) PushPullRequest() *connect.Request[api.PushPullChangesRequest] {
	return connect.NewRequest(&api.PushPullChangesRequest{ClientId: r.ID, DocumentId: r.DocID, ChangePack: r.Pack()})
}

// PushPull sends every pending change and takes in the answer, which it
// returns.
func (r *Replica) PushPull(ctx context.Context) (*api.ChangePack, error) {
	return r.pushPull(ctx, r.PushPullRequest())
}

// PushOnly sends every pending change asking for nothing back, as the SDK
// does for a document it only writes, and takes in the answer.
func (r *Replica) PushOnly(ctx context.Context) (*api.ChangePack, error) {
	req := r.PushPullRequest()
	req.Msg.PushOnly = true
	return r.pushPull(ctx, req)
}

func (r *Replica) pushPull(ctx context.Context, req *connect.Request[api.PushPullChangesRequest]) (*api.ChangePack, error) {
	resp, err := r.C.PushPullChanges(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("client %s: push pull: %w", r.ID, err)
	}
	r.Header = resp.Header()
	if err := r.Absorb(resp.Msg.GetChangePack()); err != nil {
		return nil, err
	}
	return resp.Msg.GetChangePack(), nil
}

// MustPushPull runs PushPull or fails T.
func (r *Replica) MustPushPull() *api.ChangePack {
	r.T.Helper()
	p, err := r.PushPull(Context(r.T))
	Must(r.T, err, "pushpull")
	return p
}

// Detach detaches the document with a presence CLEAR change, like the SDK.
func (r *Replica) Detach(ctx context.Context) (*api.ChangePack, error) {
	ch := r.NewClear()
	ch.Message = r.Label(r.Generation, r.LastSeq)
	resp, err := r.C.DetachDocument(ctx, connect.NewRequest(&api.DetachDocumentRequest{
		ClientId:   r.ID,
		DocumentId: r.DocID,
		ChangePack: r.Pack(),
	}))
	if err != nil {
		return nil, fmt.Errorf("client %s: detach %q: %w", r.ID, r.DocKey, err)
	}
	r.Header = resp.Header()
	if err := r.Absorb(resp.Msg.GetChangePack()); err != nil {
		return nil, err
	}
	return resp.Msg.GetChangePack(), nil
}

// WatchRequest is the Watch the SDK sends for the replica's document.
func (r *Replica) WatchRequest() *connect.Request[api.WatchRequest] {
	return connect.NewRequest(&api.WatchRequest{
		ClientId: r.ID,
		Resources: []*api.ResourceDescriptor{{Resource: &api.ResourceDescriptor_Document{
			Document: &api.DocumentDescriptor{DocumentId: r.DocID},
		}}},
	})
}

// Watch opens a Watch stream for the replica's document through C.
func (r *Replica) Watch(t testing.TB) *Stream[api.WatchResponse] {
	t.Helper()
	return OpenStream(t, func(ctx context.Context) (*connect.ServerStreamForClient[api.WatchResponse], error) {
		return r.C.Watch(ctx, r.WatchRequest())
	})
}

// WatchDocument opens a deprecated WatchDocument stream for the replica's
// document through C.
func (r *Replica) WatchDocument(t testing.TB) *Stream[api.WatchDocumentResponse] {
	t.Helper()
	return OpenStream(t, func(ctx context.Context) (*connect.ServerStreamForClient[api.WatchDocumentResponse], error) {
		return r.C.WatchDocument(ctx, connect.NewRequest(&api.WatchDocumentRequest{ClientId: r.ID, DocumentId: r.DocID}))
	})
}
