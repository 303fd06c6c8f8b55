package backend_test

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
)

// BenchmarkPushPull measures one PushPull pushing one change (and pulling
// what others pushed meanwhile), with clients pushing concurrently either on
// one document or each on its own.
func BenchmarkPushPull(b *testing.B) {
	for _, tc := range []struct{ clients, docs int }{
		{1, 1}, {10, 1}, {100, 1}, {10, 10}, {100, 100},
	} {
		b.Run(fmt.Sprintf("clients=%d/docs=%d", tc.clients, tc.docs), func(b *testing.B) {
			benchPushPull(b, tc.clients, tc.docs)
		})
	}
}

type benchClient struct {
	id        string
	actor     []byte
	vvKey     string // the actor's key in version vectors
	docID     string
	clientSeq uint32
	serverSeq int64
	lamport   int64
	mu        sync.Mutex // one call at a time per client, as the SDK does
}

func benchPushPull(b *testing.B, clients, docs int) {
	ctx := context.Background()
	be, _ := newBackend(b, nil)
	cs := make([]*benchClient, clients)
	for i := range cs {
		id := activate(b, be, fmt.Sprint("client-", i))
		actor, _ := hex.DecodeString(id)
		docID, resp, err := be.AttachDocument(ctx, 0, id, fmt.Sprint("doc-", i%docs), pack(0, 0))
		if err != nil {
			b.Fatal(err)
		}
		cs[i] = &benchClient{id: id, actor: actor, vvKey: base64.StdEncoding.EncodeToString(actor), docID: docID, serverSeq: resp.Checkpoint.ServerSeq}
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	for w := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := cs[w]
			c.mu.Lock()
			defer c.mu.Unlock()
			for next.Add(1) <= int64(b.N) {
				c.clientSeq++
				c.lamport++
				ch := &api.Change{
					Id: &api.ChangeID{
						ClientSeq:     c.clientSeq,
						Lamport:       c.lamport,
						ActorId:       c.actor,
						VersionVector: &api.VersionVector{Vector: map[string]int64{c.vvKey: c.lamport}},
					},
					PresenceChange: &api.PresenceChange{
						Type:     api.PresenceChange_CHANGE_TYPE_PUT,
						Presence: &api.Presence{Data: map[string]string{"cursor": "1"}},
					},
				}
				p := &api.ChangePack{
					DocumentKey:   "doc",
					Checkpoint:    &api.Checkpoint{ServerSeq: c.serverSeq, ClientSeq: c.clientSeq},
					Changes:       []*api.Change{ch},
					VersionVector: &api.VersionVector{Vector: map[string]int64{c.vvKey: c.lamport}},
				}
				resp, err := be.PushPull(ctx, 0, c.id, c.docID, p, false)
				if err != nil {
					b.Error(err)
					return
				}
				c.serverSeq = resp.Checkpoint.ServerSeq
			}
		}()
	}
	wg.Wait()
}

// BenchmarkChangedDelivery measures a PushPull of one change until every
// watcher of the document has received the CHANGED event it causes.
func BenchmarkChangedDelivery(b *testing.B) {
	for _, watchers := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("watchers=%d", watchers), func(b *testing.B) {
			ctx := context.Background()
			be, _ := newBackend(b, nil)
			pusher := activate(b, be, "pusher")
			actor, _ := hex.DecodeString(pusher)
			docID, _, err := be.AttachDocument(ctx, 0, pusher, "doc", pack(0, 0))
			if err != nil {
				b.Fatal(err)
			}
			acks := make(chan struct{}, watchers)
			var wg sync.WaitGroup
			for i := range watchers {
				id := activate(b, be, fmt.Sprint("watcher-", i))
				if _, _, err := be.AttachDocument(ctx, 0, id, "doc", pack(0, 0)); err != nil {
					b.Fatal(err)
				}
				sub, _, err := be.Watch(ctx, 0, id, docID)
				if err != nil {
					b.Fatal(err)
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					for ev := range sub.Events() {
						if ev.Type == api.DocEventType_DOC_EVENT_TYPE_DOCUMENT_CHANGED {
							acks <- struct{}{}
						}
					}
				}()
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				seq := uint32(i + 1)
				ch := &api.Change{Id: &api.ChangeID{
					ClientSeq: seq, Lamport: int64(seq), ActorId: actor,
					VersionVector: &api.VersionVector{Vector: map[string]int64{base64.StdEncoding.EncodeToString(actor): int64(seq)}},
				}}
				if _, err := be.PushPull(ctx, 0, pusher, docID, pack(int64(i), seq, ch), true); err != nil {
					b.Fatal(err)
				}
				for range watchers {
					<-acks
				}
			}
			b.StopTimer()
			_ = be.Close(ctx)
			wg.Wait()
		})
	}
}
