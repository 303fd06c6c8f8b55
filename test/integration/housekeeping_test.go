package integration_test

import (
	"fmt"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	dbmemory "github.com/yorkie-affinity/yorkie/server/backend/database/memory"
	"github.com/yorkie-affinity/yorkie/server/rpc/errinfo"
	"github.com/yorkie-affinity/yorkie/server/servertest"
	"github.com/yorkie-affinity/yorkie/server/servertest/testclock"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
)

// TestHousekeepingDeactivatesSilentClients leaves two clients without a call
// past a 1s threshold, one of them holding a Watch stream open: housekeeping
// deactivates the other one only, and the watcher once its stream has ended.
// A deactivated client that comes back is told so, and the SDK then
// deactivates itself.
func TestHousekeepingDeactivatesSilentClients(t *testing.T) {
	clock := &testclock.Clock{}
	db := dbmemory.New()
	srv := servertest.StartWith(t, []server.Option{server.WithClock(clock.Now)}, func(cfg *server.Config) {
		cfg.DB = db
		cfg.ClientDeactivateThreshold = time.Second
		cfg.HousekeepingInterval = time.Hour // runs only when the test says
	})
	c := servertest.Client(t, srv, servertest.ConnectJSON)
	house := srv.Housekeeper()
	status := func(r *wire.Replica) database.ClientStatus {
		t.Helper()
		info, err := db.FindClient(wire.Context(t), database.DefaultProjectID, r.ID)
		wire.Must(t, err, "find client")
		return info.Status
	}

	silent := attachedReplica(t, c)
	watcher := attachedReplica(t, c)
	stream := watcher.Watch(t)
	if stream.Next(t).GetInitialization() == nil {
		t.Fatalf("first Watch message is not an initialization")
	}
	// A call that fails is no activity: made-up client IDs cost nothing.
	stranger := *silent
	stranger.ID = "0123456789abcdef01234567"
	_, err := stranger.PushPull(wire.Context(t))
	wantError(t, err, connect.CodeNotFound, errinfo.CodeClientNotFound)
	if r := house.RunOnce(wire.Context(t)); r.Err != nil || r.Touched != 2 || len(r.Candidates) != 0 {
		t.Fatalf("run before the pause = %+v; want the two clients' activity recorded and nobody deactivated", r)
	}

	clock.Advance(3 * time.Hour)
	r := house.RunOnce(wire.Context(t))
	if r.Err != nil || r.Deactivated != 1 || len(r.Candidates) != 1 || r.Candidates[0] != silent.ID {
		t.Fatalf("run after the pause = %+v; want only %s deactivated", r, silent.ID)
	}
	if got := status(silent); got != database.ClientDeactivated {
		t.Fatalf("silent client is %s, want deactivated", got)
	}
	if got := status(watcher); got != database.ClientActivated {
		t.Fatalf("watching client is %s, want activated", got)
	}
	_, err = silent.PushPull(wire.Context(t))
	wantError(t, err, connect.CodeFailedPrecondition, errinfo.CodeClientNotActivated)

	// Once the stream is gone, the watcher is silent too.
	stream.Close()
	retryUntil(t, "the watcher deactivated after its stream ended", func() error {
		clock.Advance(3 * time.Hour)
		house.RunOnce(wire.Context(t))
		if got := status(watcher); got != database.ClientDeactivated {
			return fmt.Errorf("watcher is %s", got)
		}
		return nil
	})
}
