package wire

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"connectrpc.com/connect"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
)

// Replica plays one SDK client of one document: it numbers its changes,
// keeps every change the server has not acknowledged and sends them all again
// on each PushPull, keeps the highest checkpoint it was given, and records
// what it pulled. Its state is exported so that a test can stage what a
// misbehaving or unlucky client would send. It is used by one goroutine at a
// time.
type Replica struct {
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

	// Key and ID are the client's key and the ID the server gave it; Actor is
	// the ID's bytes, the actor of its changes.
	Key   string
	ID    string
	Actor []byte

	// DocKey and DocID name the attached document.
	DocKey string
	DocID  string

	// Lamport is the clock of the newest change made or pulled.
	Lamport int64
	// LastSeq is the client_seq of the newest local change.
	LastSeq uint32
	// Acked is the highest client_seq the server acknowledged.
	Acked uint32
	// ServerSeq is the highest server_seq the server sent.
	ServerSeq int64
	// Pending holds the local changes not acknowledged yet, in order.
	Pending []*api.Change
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
	id := resp.Msg.GetClientId()
	actor, err := hex.DecodeString(id)
	if err != nil {
		return nil, fmt.Errorf("client ID %q is not hex: %w", id, err)
	}
	return &Replica{C: c, Key: key, ID: id, Actor: actor, Header: resp.Header()}, nil
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
func ChangeKey(ch *api.Change) string {
	return fmt.Sprintf("%s/%d", hex.EncodeToString(ch.GetId().GetActorId()), ch.GetId().GetClientSeq())
}

// Label is the message of the replica's change with client_seq seq made in
// attachment generation.
func (r *Replica) Label(generation int, seq uint32) string {
	return fmt.Sprintf("%s#%d/%d", r.ID, generation, seq)
}

// SetKey is the root key the replica's operation change with client_seq seq
// sets, so the document's keys name every change that made it in.
func (r *Replica) SetKey(seq uint32) string { return fmt.Sprintf("%s-%d", r.ID, seq) }

// NewChange records a local change the way the SDK builds one: the next
// client_seq and lamport and a version vector of the replica's own clock,
// with a presence PUT when presence is not nil and otherwise one Set of
// SetKey(client_seq) on the root object.
func (r *Replica) NewChange(presence map[string]string) *api.Change {
	r.Lamport++
	r.LastSeq++
	ch := &api.Change{Message: r.Label(r.Generation, r.LastSeq), Id: &api.ChangeID{
		ClientSeq:     r.LastSeq,
		Lamport:       r.Lamport,
		ActorId:       r.Actor,
		VersionVector: &api.VersionVector{Vector: map[string]int64{base64.StdEncoding.EncodeToString(r.Actor): r.Lamport}},
	}}
	if presence != nil {
		ch.PresenceChange = &api.PresenceChange{
			Type:     api.PresenceChange_CHANGE_TYPE_PUT,
			Presence: &api.Presence{Data: presence},
		}
	} else {
		ch.Operations = []*api.Operation{{Body: &api.Operation_Set_{Set: &api.Operation_Set{
			ParentCreatedAt: RootTicket(),
			Key:             r.SetKey(r.LastSeq),
			Value: &api.JSONElementSimple{
				CreatedAt: &api.TimeTicket{Lamport: r.Lamport, ActorId: r.Actor},
				Type:      api.ValueType_VALUE_TYPE_INTEGER,
				Value:     []byte{byte(r.LastSeq), byte(r.LastSeq >> 8), byte(r.LastSeq >> 16), byte(r.LastSeq >> 24)},
			},
			ExecutedAt: &api.TimeTicket{Lamport: r.Lamport, ActorId: r.Actor},
		}}}}
	}
	r.Pending = append(r.Pending, ch)
	return ch
}

// RootTicket is the creation ticket of a document's root object, as the SDK
// writes it: lamport 0 and the all-zero initial actor.
func RootTicket() *api.TimeTicket { return &api.TimeTicket{ActorId: make([]byte, 12)} }

// Edit records n operation changes.
func (r *Replica) Edit(n int) {
	for range n {
		r.NewChange(nil)
	}
}

// Pack is the change pack the SDK would send now: every pending change and
// the checkpoint it holds.
func (r *Replica) Pack() *api.ChangePack {
	return &api.ChangePack{
		DocumentKey: r.DocKey,
		Checkpoint:  &api.Checkpoint{ServerSeq: r.ServerSeq, ClientSeq: r.Acked + uint32(len(r.Pending))},
		Changes:     r.Pending,
	}
}

// Absorb takes in an answer's change pack: acknowledged changes leave
// Pending, the checkpoint only rises, and Lamport follows the pulled changes.
// It reports an answer without a checkpoint, one acknowledging a change the
// replica never made, and a pulled change that lacks a version vector or is
// one the replica sent in its current attachment.
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
	if p == nil || p.GetCheckpoint() == nil {
		return fmt.Errorf("client %s: answer has no change pack with a checkpoint", r.ID)
	}
	cp := p.GetCheckpoint()
	if cp.GetClientSeq() > r.LastSeq {
		return fmt.Errorf("client %s: server acknowledged client_seq %d, newest change is %d", r.ID, cp.GetClientSeq(), r.LastSeq)
	}
	r.Acked = max(r.Acked, cp.GetClientSeq())
	r.ServerSeq = max(r.ServerSeq, cp.GetServerSeq())
	kept := r.Pending[:0]
	for _, ch := range r.Pending {
		if ch.GetId().GetClientSeq() > r.Acked {
			kept = append(kept, ch)
		}
	}
	r.Pending = kept
	if r.Pulled == nil {
		r.Pulled = map[string]*api.Change{}
	}
	if r.Seen == nil {
		r.Seen = map[string]int{}
	}
	if r.ByLabel == nil {
		r.ByLabel = map[string]int{}
	}
	for _, ch := range p.GetChanges() {
		key := ChangeKey(ch)
		if hex.EncodeToString(ch.GetId().GetActorId()) == r.ID &&
			strings.HasPrefix(ch.GetMessage(), fmt.Sprintf("%s#%d/", r.ID, r.Generation)) {
			return fmt.Errorf("client %s: was sent back its own change %d", r.ID, ch.GetId().GetClientSeq())
		}
		r.ByLabel[ch.GetMessage()]++
		if ch.GetId().GetVersionVector() == nil {
			return fmt.Errorf("client %s: pulled change %s has no version vector", r.ID, key)
		}
		r.Lamport = max(r.Lamport, ch.GetId().GetLamport())
		r.Seen[key]++
		r.Pulled[key] = ch
	}
	return nil
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
	r.LastSeq, r.Acked, r.ServerSeq, r.Lamport, r.Pending = 0, 0, 0, 0, nil
	r.DocKey = docKey
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
	ch := r.NewChange(nil)
	ch.Operations = nil
	ch.PresenceChange = &api.PresenceChange{Type: api.PresenceChange_CHANGE_TYPE_CLEAR}
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
