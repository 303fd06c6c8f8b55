package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
	"github.com/yorkie-affinity/yorkie/server/servertest/sdksim"
)

// bystander is an honest client of the default project editing a document
// of its own, one PushPull every 10 ms, while an attack runs: its latency
// is what other users feel.
type bystander struct {
	c  v1connect.YorkieServiceClient
	tr *http.Transport
	s  *sdksim.Client
	id string
}

func newBystander(ctx context.Context, t *target) (*bystander, error) {
	c, tr := t.yorkie("")
	s, err := activate(ctx, c, "bystander")
	if err != nil {
		tr.CloseIdleConnections()
		return nil, err
	}
	id, err := attach(ctx, c, s, "bystander-doc")
	if err != nil {
		tr.CloseIdleConnections()
		return nil, err
	}
	return &bystander{c: c, tr: tr, s: s, id: id}, nil
}

func (b *bystander) close() { b.tr.CloseIdleConnections() }

// latencies are the bystander's PushPull times in one window.
type latencies struct {
	took   []time.Duration
	failed int
}

func (l latencies) quantile(q float64) time.Duration {
	if len(l.took) == 0 {
		return 0
	}
	s := slices.Clone(l.took)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

func (l latencies) String() string {
	out := fmt.Sprintf("%s / %s (%d pushes", ms(l.quantile(0.5)), ms(l.quantile(0.99)), len(l.took))
	if l.failed > 0 {
		out += fmt.Sprintf(", %d failed", l.failed)
	}
	return out + ")"
}

// start pushes until the returned function is called, which returns the
// latencies.
func (b *bystander) start(ctx context.Context) func() latencies {
	wctx, stop := context.WithCancel(ctx)
	done := make(chan latencies, 1)
	go func() {
		var l latencies
		for wctx.Err() == nil {
			b.s.NewSet("k")
			start := time.Now()
			if _, err := push(wctx, b.c, b.s, b.id); err != nil {
				if wctx.Err() != nil {
					break // the window ended during the push
				}
				l.failed++
			}
			l.took = append(l.took, time.Since(start))
			select {
			case <-wctx.Done():
			case <-time.After(10 * time.Millisecond):
			}
		}
		done <- l
	}()
	return func() latencies {
		stop()
		return <-done
	}
}

// run pushes for d.
func (b *bystander) run(ctx context.Context, d time.Duration) latencies {
	end := b.start(ctx)
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
	return end()
}
