package channel

import (
	"fmt"
	"runtime"
	"testing"
)

// BenchmarkSessionMemory reports the heap one channel session costs, alone
// and with the watcher a realtime SDK client adds, on a channel of 2,000.
func BenchmarkSessionMemory(b *testing.B) {
	const n = 2000
	for _, watch := range []bool{false, true} {
		b.Run(fmt.Sprintf("watcher=%v", watch), func(b *testing.B) {
			var perSession float64
			for range b.N {
				m := New(Config{})
				clients := make([]string, n)
				for i := range clients {
					clients[i] = fmt.Sprintf("%024x", i)
				}
				before := heapInUse()
				watchers := make([]*Watcher, 0, n)
				for _, c := range clients {
					if _, _, err := m.Attach(c, "room.sub", 0, nil); err != nil {
						b.Fatal(err)
					}
					if watch {
						w, err := m.Watch(c, "room", nil)
						if err != nil {
							b.Fatal(err)
						}
						watchers = append(watchers, w)
					}
				}
				perSession = float64(heapInUse()-before) / n
				runtime.KeepAlive(watchers)
				m.Close()
			}
			b.ReportMetric(perSession, "B/session")
		})
	}
}

func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
