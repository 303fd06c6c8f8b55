package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
)

// signUpWorkers is how many SignUp calls the attack keeps in flight.
const signUpWorkers = 4

// runSignUp signs up new accounts from one address, signUpWorkers calls at
// a time, for cfg.signUpFor, and reads the server's CPU time around them.
func runSignUp(ctx context.Context, t *target, cfg config, _ *slog.Logger) ([]figure, error) {
	before, err := t.scrape(ctx, false)
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var next atomic.Int64
	outcomes := map[string]int{}
	ok, calls := 0, 0
	end := time.Now().Add(cfg.signUpFor)
	for range signUpWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) && ctx.Err() == nil {
				_, err := t.admin.SignUp(ctx, connect.NewRequest(&api.SignUpRequest{
					Username: fmt.Sprintf("signup%d", next.Add(1)), Password: "Passw0rd!long",
				}))
				mu.Lock()
				calls++
				outcomes[code(err)]++
				if err == nil {
					ok++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	after, err := t.scrape(ctx, false)
	if err != nil {
		return nil, err
	}
	cpu := time.Duration((after["process_cpu_seconds_total"] - before["process_cpu_seconds_total"]) * float64(time.Second))
	perCall := ms(cpu / time.Duration(max(calls, 1)))
	perOK := "(none succeeded)"
	if ok > 0 {
		perOK = ms(cpu / time.Duration(ok))
	}
	return []figure{
		{fmt.Sprintf("SignUp calls from one address, %d at a time, for %v", signUpWorkers, cfg.signUpFor), fmt.Sprintf("%d: %s", calls, outcomeString(outcomes))},
		{"server CPU: in all / per call / per account made", fmt.Sprintf("%s / %s / %s", ms(cpu), perCall, perOK)},
	}, nil
}
