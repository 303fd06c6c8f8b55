package backend_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/backend/database/memory"
	"github.com/yorkie-affinity/yorkie/server/servertest/sdksim"
)

// BenchmarkPushPull measures one PushPull pushing one change (and pulling
// what others pushed meanwhile), with clients pushing concurrently either on
// one document or each on its own.
func BenchmarkPushPull(b *testing.B) {
	for _, tc := range []struct{ clients, docs int }{
		{1, 1}, {10, 1}, {100, 1}, {10, 10}, {100, 100},
	} {
		b.Run(fmt.Sprintf("clients=%d/docs=%d", tc.clients, tc.docs), func(b *testing.B) {
			pushPullLoad(b, memory.New(), tc.clients, tc.docs)
		})
	}
}

// pushPullLoad attaches clients to docs documents of db, then has them push
// one presence change per PushPull, each client one call at a time as the SDK
// does, until b.N calls are done. It reports ops/s and us/op of wall time.
func pushPullLoad(b *testing.B, db database.Database, clients, docs int) {
	ctx := context.Background()
	be, _ := newBackend(b, db)
	type client struct {
		*sdksim.Client
		docID string
	}
	cs := make([]client, clients)
	for i := range cs {
		c := simClient(b, be, fmt.Sprint("bench-client-", i))
		cs[i] = client{c, attachSim(b, be, c, fmt.Sprint("bench-doc-", i%docs))}
	}
	var (
		next   atomic.Int64
		wg     sync.WaitGroup
		failed atomic.Pointer[error]
	)
	b.ReportAllocs()
	b.ResetTimer()
	for _, c := range cs {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) && failed.Load() == nil {
				c.NewPresence(map[string]string{"cursor": "1"})
				if err := pushPullSim(ctx, be, c.Client, c.docID, false); err != nil {
					failed.CompareAndSwap(nil, &err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	if err := failed.Load(); err != nil {
		b.Fatal(*err)
	}
	elapsed := b.Elapsed()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "ops/s")
	b.ReportMetric(elapsed.Seconds()*1e6/float64(b.N), "us/op")
}

// BenchmarkChangedDelivery measures a PushPull of one change until every
// watcher of the document has received the CHANGED event it causes.
func BenchmarkChangedDelivery(b *testing.B) {
	for _, watchers := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("watchers=%d", watchers), func(b *testing.B) {
			ctx := context.Background()
			be, _ := newBackend(b, nil)
			pusher := simClient(b, be, "pusher")
			docID := attachSim(b, be, pusher, "doc")
			acks := make(chan struct{}, watchers)
			var wg sync.WaitGroup
			for i := range watchers {
				id := activate(b, be, fmt.Sprint("watcher-", i))
				if _, _, err := be.AttachDocument(ctx, defaultProject, 0, id, "doc", pack(0, 0)); err != nil {
					b.Fatal(err)
				}
				sub, _, err := be.Watch(ctx, defaultProject, 0, id, docID)
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
			for range b.N {
				pusher.NewEmpty()
				if err := pushPullSim(ctx, be, pusher, docID, true); err != nil {
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
