package integration_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/servertest"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
)

// BenchmarkLateJoinerAttach measures a fresh client's attach to a document
// with a long history, over Connect JSON: the time of the AttachDocument call
// and the bytes of its answer. "growing" sets a new key in every change, so
// the document grows with its history; "small" increases one counter, so the
// document stays a few bytes while its history grows. The cost should follow
// the document's size, not its history; documents-built counts the documents
// the owner built from the database during the attaches (0: it answered from
// memory).
func BenchmarkLateJoinerAttach(b *testing.B) {
	for _, shape := range []string{"growing", "small"} {
		for _, n := range []int{1000, 10000, 100000} {
			b.Run(fmt.Sprintf("%s/changes=%d", shape, n), func(b *testing.B) {
				srv := servertest.Start(b)
				c := servertest.Client(b, srv, servertest.ConnectJSON)
				key := wire.UniqueKey(b, "late")
				writer := newReplica(b, c)
				writer.MustAttach(key)
				var counter *api.TimeTicket
				for written := 0; written < n; {
					batch := min(1000, n-written)
					for range batch {
						ch := writer.NewChange(nil)
						if shape == "small" {
							counter = smallEdit(ch, counter)
						}
					}
					writer.MustPushPull()
					written += batch
				}
				built := srv.Backend().Metrics().DocumentsBuilt.Load()
				var attach time.Duration
				var bytes, snapshots int
				b.ResetTimer()
				for range b.N {
					b.StopTimer()
					late := newReplica(b, c)
					b.StartTimer()
					start := time.Now()
					resp, err := late.Attach(context.Background(), key)
					attach += time.Since(start)
					b.StopTimer()
					wire.Must(b, err, "late attach")
					bytes += proto.Size(resp)
					if resp.GetChangePack().GetSnapshot() != nil {
						snapshots++
					}
					_, err = late.Detach(context.Background())
					wire.Must(b, err, "detach")
					b.StartTimer()
				}
				b.ReportMetric(float64(attach.Microseconds())/1000/float64(b.N), "attach-ms")
				b.ReportMetric(float64(bytes)/float64(b.N), "resp-bytes")
				b.ReportMetric(float64(snapshots)/float64(b.N), "snapshots/op")
				b.ReportMetric(float64(srv.Backend().Metrics().DocumentsBuilt.Load()-built), "documents-built")
			})
		}
	}
}

// smallEdit turns ch into a change of a document that stays small: the first
// sets a counter on the root, the others increase it. It returns the
// counter's ticket.
func smallEdit(ch *api.Change, counter *api.TimeTicket) *api.TimeTicket {
	at := &api.TimeTicket{Lamport: ch.Id.Lamport, ActorId: ch.Id.ActorId}
	one := binary.LittleEndian.AppendUint32(nil, 1)
	if counter == nil {
		ch.Operations = []*api.Operation{{Body: &api.Operation_Set_{Set: &api.Operation_Set{
			ParentCreatedAt: wire.RootTicket(),
			Key:             "count",
			Value:           &api.JSONElementSimple{CreatedAt: at, Type: api.ValueType_VALUE_TYPE_INTEGER_CNT, Value: binary.LittleEndian.AppendUint32(nil, 0)},
			ExecutedAt:      at,
		}}}}
		return at
	}
	ch.Operations = []*api.Operation{{Body: &api.Operation_Increase_{Increase: &api.Operation_Increase{
		ParentCreatedAt: counter,
		Value:           &api.JSONElementSimple{CreatedAt: at, Type: api.ValueType_VALUE_TYPE_INTEGER, Value: one},
		ExecutedAt:      at,
	}}}}
	return counter
}
