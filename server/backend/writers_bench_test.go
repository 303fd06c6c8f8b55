package backend_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend"
)

// benchKeys and benchWriters size the document and the writers of the
// PushPull benchmarks that measure the document's lock.
const (
	benchKeys    = 10000
	benchWriters = 4
)

// attachWriters attaches benchWriters clients to "doc", fills it with
// benchKeys keys and brings every writer up to date, so that the timed part
// of a benchmark starts on a large, settled document.
func attachWriters(b *testing.B, be *backend.Backend) []*writer {
	b.Helper()
	ws := make([]*writer, benchWriters)
	for i := range ws {
		ws[i] = newWriter(b, be, fmt.Sprint("w", i))
		ws[i].attach("doc")
	}
	for lo := 0; lo < benchKeys; lo += 100 {
		ws[0].mustPush(ws[0].change(func(at *api.TimeTicket) []*api.Operation {
			ops := make([]*api.Operation, 0, 100)
			for k := lo; k < lo+100; k++ {
				t := &api.TimeTicket{Lamport: at.Lamport, Delimiter: uint32(k - lo + 1), ActorId: at.ActorId}
				ops = append(ops, setOp(rootTicket(), fmt.Sprint("k", k), "initial value", t))
			}
			return ops
		}))
	}
	for _, w := range ws {
		w.mustPush()
	}
	return ws
}

// runWriters resets the timer and has the writers push b.N one-key changes
// between them, at once; it returns the latency of every PushPull.
func runWriters(b *testing.B, ws []*writer) []time.Duration {
	lat := make([][]time.Duration, len(ws))
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	for c, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := c; i < b.N; i += len(ws) {
				start := time.Now()
				if _, err := w.push(w.set(fmt.Sprint("k", i*7919%benchKeys), fmt.Sprint(i))); err != nil {
					b.Error(err)
					return
				}
				lat[c] = append(lat[c], time.Since(start))
			}
		}()
	}
	wg.Wait()
	return slices.Concat(lat...)
}

// reportLatency reports the 99th percentile and the slowest of lat.
func reportLatency(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	if len(lat) > 0 {
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-us")
		b.ReportMetric(float64(lat[len(lat)-1].Microseconds()), "max-us")
	}
}
