package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"connectrpc.com/connect"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
)

// runSignUp signs up new accounts from one address, one call after the
// other, for cfg.signUpFor, and reads the server's CPU time around them.
func runSignUp(ctx context.Context, t *target, cfg config, _ *slog.Logger) ([]figure, error) {
	before, err := t.scrape(ctx, false)
	if err != nil {
		return nil, err
	}
	outcomes := map[string]int{}
	ok, calls := 0, 0
	end := time.Now().Add(cfg.signUpFor)
	for ; time.Now().Before(end) && ctx.Err() == nil; calls++ {
		_, err := t.admin.SignUp(ctx, connect.NewRequest(&api.SignUpRequest{
			Username: fmt.Sprintf("signup%d", calls), Password: "Passw0rd!long",
		}))
		outcomes[code(err)]++
		if err == nil {
			ok++
		}
	}
	after, err := t.scrape(ctx, false)
	if err != nil {
		return nil, err
	}
	cpu := time.Duration((after["process_cpu_seconds_total"] - before["process_cpu_seconds_total"]) * float64(time.Second))
	perOK := "(none succeeded)"
	if ok > 0 {
		perOK = ms(cpu / time.Duration(ok))
	}
	return []figure{
		{fmt.Sprintf("SignUp calls from one address, one after the other, for %v", cfg.signUpFor), fmt.Sprintf("%d: %s", calls, outcomeString(outcomes))},
		{"server CPU: in all / per account made", fmt.Sprintf("%s / %s", ms(cpu), perOK)},
	}, nil
}
