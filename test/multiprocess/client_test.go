package multiprocess_test

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"fmt"

	"connectrpc.com/connect"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
)

// docClient is one SDK-like client of one document: it numbers its changes,
// keeps every change the server has not acknowledged and sends them all
// again on each PushPull, and keeps the highest checkpoint it was given.
// It is used by one goroutine at a time.
type docClient struct {
	// c is the server the client talks to now; tests switch it to move the
	// client to another server.
	c      v1connect.YorkieServiceClient
	id     string
	actor  []byte
	docKey string
	docID  string

	lamport   int64
	lastSeq   uint32 // client_seq of the newest local change
	acked     uint32 // highest client_seq the server acknowledged
	serverSeq int64  // highest server_seq the server sent
	pending   []*api.Change
}

// activateClient activates a client with the key through c.
func activateClient(ctx context.Context, c v1connect.YorkieServiceClient, key string) (*docClient, error) {
	resp, err := c.ActivateClient(ctx, connect.NewRequest(&api.ActivateClientRequest{ClientKey: key}))
	if err != nil {
		return nil, fmt.Errorf("activate client %q: %w", key, err)
	}
	id := resp.Msg.GetClientId()
	actor, err := hex.DecodeString(id)
	if err != nil {
		return nil, fmt.Errorf("client ID %q is not hex: %w", id, err)
	}
	return &docClient{c: c, id: id, actor: actor}, nil
}

// setKey is the object key the client's change with client_seq seq sets, so
// the document's keys name every change that made it into the document.
func (d *docClient) setKey(seq uint32) string { return fmt.Sprintf("%s-%d", d.id, seq) }

// newChange records a local change: a presence PUT when presence is set,
// otherwise one Set of setKey(client_seq) on the root object.
func (d *docClient) newChange(presence map[string]string) *api.Change {
	d.lamport++
	d.lastSeq++
	ch := &api.Change{Id: &api.ChangeID{
		ClientSeq:     d.lastSeq,
		Lamport:       d.lamport,
		ActorId:       d.actor,
		VersionVector: &api.VersionVector{Vector: map[string]int64{base64.StdEncoding.EncodeToString(d.actor): d.lamport}},
	}}
	if presence != nil {
		ch.PresenceChange = &api.PresenceChange{
			Type:     api.PresenceChange_CHANGE_TYPE_PUT,
			Presence: &api.Presence{Data: presence},
		}
	} else {
		ch.Operations = []*api.Operation{{Body: &api.Operation_Set_{Set: &api.Operation_Set{
			ParentCreatedAt: &api.TimeTicket{},
			Key:             d.setKey(d.lastSeq),
			Value: &api.JSONElementSimple{
				CreatedAt: &api.TimeTicket{Lamport: d.lamport, ActorId: d.actor},
				Type:      api.ValueType_VALUE_TYPE_INTEGER,
				Value:     []byte{0, 0, 0, 1},
			},
			ExecutedAt: &api.TimeTicket{Lamport: d.lamport, ActorId: d.actor},
		}}}}
	}
	d.pending = append(d.pending, ch)
	return ch
}

// pack is the change pack the SDK would send now.
func (d *docClient) pack() *api.ChangePack {
	return &api.ChangePack{
		DocumentKey: d.docKey,
		Checkpoint:  &api.Checkpoint{ServerSeq: d.serverSeq, ClientSeq: d.acked + uint32(len(d.pending))},
		Changes:     d.pending,
	}
}

// absorb takes in a response pack: acknowledged changes leave pending, the
// checkpoint only rises, and lamport follows the pulled changes.
func (d *docClient) absorb(p *api.ChangePack) error {
	if p == nil || p.GetCheckpoint() == nil {
		return fmt.Errorf("client %s: response has no checkpoint", d.id)
	}
	cp := p.GetCheckpoint()
	if cp.GetClientSeq() > d.lastSeq {
		return fmt.Errorf("client %s: server acknowledged client_seq %d, newest change is %d", d.id, cp.GetClientSeq(), d.lastSeq)
	}
	d.acked = max(d.acked, cp.GetClientSeq())
	d.serverSeq = max(d.serverSeq, cp.GetServerSeq())
	kept := d.pending[:0]
	for _, ch := range d.pending {
		if ch.GetId().GetClientSeq() > d.acked {
			kept = append(kept, ch)
		}
	}
	d.pending = kept
	for _, ch := range p.GetChanges() {
		d.lamport = max(d.lamport, ch.GetId().GetLamport())
	}
	return nil
}

// attach attaches docKey; with presence it sends the SDK's initial presence
// change, without it nothing (a pure read of the whole document).
func (d *docClient) attach(ctx context.Context, docKey string, presence map[string]string) (*api.ChangePack, error) {
	d.docKey = docKey
	if presence != nil {
		d.newChange(presence)
	}
	resp, err := d.c.AttachDocument(ctx, connect.NewRequest(&api.AttachDocumentRequest{
		ClientId:   d.id,
		ChangePack: d.pack(),
	}))
	if err != nil {
		return nil, fmt.Errorf("attach %q: %w", docKey, err)
	}
	d.docID = resp.Msg.GetDocumentId()
	if err := d.absorb(resp.Msg.GetChangePack()); err != nil {
		return nil, err
	}
	return resp.Msg.GetChangePack(), nil
}

// pushPull sends every pending change and takes in the answer.
func (d *docClient) pushPull(ctx context.Context) (*api.ChangePack, error) {
	resp, err := d.c.PushPullChanges(ctx, connect.NewRequest(&api.PushPullChangesRequest{
		ClientId:   d.id,
		DocumentId: d.docID,
		ChangePack: d.pack(),
	}))
	if err != nil {
		return nil, fmt.Errorf("client %s: push pull: %w", d.id, err)
	}
	if err := d.absorb(resp.Msg.GetChangePack()); err != nil {
		return nil, err
	}
	return resp.Msg.GetChangePack(), nil
}

// logEntry is one change of a document's log as a client receives it.
type logEntry struct {
	serverSeq int64
	actor     string
	clientSeq uint32
}

// entries lists the pulled changes of a pack in the order received.
func entries(p *api.ChangePack) []logEntry {
	out := make([]logEntry, 0, len(p.GetChanges()))
	for _, ch := range p.GetChanges() {
		out = append(out, logEntry{
			serverSeq: ch.GetId().GetServerSeq(),
			actor:     hex.EncodeToString(ch.GetId().GetActorId()),
			clientSeq: ch.GetId().GetClientSeq(),
		})
	}
	return out
}

// setKeys returns the root keys the pack's changes set, in order.
func setKeys(p *api.ChangePack) []string {
	var keys []string
	for _, ch := range p.GetChanges() {
		for _, op := range ch.GetOperations() {
			if s := op.GetSet(); s != nil {
				keys = append(keys, s.GetKey())
			}
		}
	}
	return keys
}
