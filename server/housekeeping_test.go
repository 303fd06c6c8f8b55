package server_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/require"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/backend/database/dbtest"
	"github.com/yorkie-affinity/yorkie/server/backend/database/memory"
	"github.com/yorkie-affinity/yorkie/server/servertest"
	"github.com/yorkie-affinity/yorkie/server/servertest/testclock"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
	"github.com/yorkie-affinity/yorkie/test/testenv"
)

// TestHousekeepingHonoursProjectThresholds runs a server's housekeeping on a
// hand-moved clock over silent clients of four projects: A (1h), B (3h), one
// without a setting and the default project, under the server's 24h. Past
// 1h only A's client is deactivated, past 3h B's too, and the other two
// only past the server's threshold.
func TestHousekeepingHonoursProjectThresholds(t *testing.T) {
	t.Run("memory", func(t *testing.T) { testProjectThresholds(t, memory.New()) })
	t.Run("mongo", func(t *testing.T) {
		m := testenv.MongoURI(t)
		testProjectThresholds(t, dbtest.DialMongo(t, m, m.NewDatabase()))
	})
}

func testProjectThresholds(t *testing.T, db database.Database) {
	clock := &testclock.Clock{}
	srv := servertest.StartWith(t, []server.Option{server.WithClock(clock.Now)}, func(cfg *server.Config) {
		cfg.DB = db
		cfg.ClientDeactivateThreshold = 24 * time.Hour
		cfg.HousekeepingInterval = time.Hour // runs only when the test says
	})
	ctx := t.Context()
	silent := map[string]string{} // project name -> its client's ID
	projects := map[string]string{database.DefaultProjectName: database.DefaultProjectID}
	for name, threshold := range map[string]string{"a": "1h", "b": "3h", "unset": ""} {
		p, err := db.CreateProject(ctx, "owner", name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.UpdateProject(ctx, "owner", p.ID, &database.ProjectUpdate{ClientDeactivateThreshold: &threshold}); err != nil {
			t.Fatal(err)
		}
		projects[name] = p.ID
	}
	for name, id := range projects {
		c, err := db.ActivateClient(ctx, id, "silent", nil)
		if err != nil {
			t.Fatal(err)
		}
		silent[name] = c.ID
	}

	// after moves the clock past d plus the interval (the most activity can
	// lag), runs housekeeping and checks which projects lost their client.
	var at time.Duration
	after := func(d time.Duration, gone ...string) {
		t.Helper()
		d += time.Hour + time.Minute
		clock.Advance(d - at)
		at = d
		r := srv.Housekeeper().RunOnce(ctx)
		if r.Err != nil {
			t.Fatalf("run past %v: %v", d, r.Err)
		}
		deactivated := map[string]bool{}
		for _, name := range gone {
			deactivated[name] = true
		}
		for name, id := range silent {
			c, err := db.FindClient(ctx, projects[name], id)
			if err != nil {
				t.Fatal(err)
			}
			want := database.ClientActivated
			if deactivated[name] {
				want = database.ClientDeactivated
			}
			if c.Status != want {
				t.Fatalf("run past %v: the client of project %q is %s, want %s (report %+v)", d, name, c.Status, want, r)
			}
		}
	}
	after(time.Hour, "a")
	after(3*time.Hour, "a", "b")
	after(23*time.Hour, "a", "b")
	after(24*time.Hour, "a", "b", "unset", database.DefaultProjectName)
}

// TestHousekeepingEndsChannelSessions has housekeeping deactivate a silent
// client that holds a channel session: the session leaves the channel's count
// at once, as when the client deactivates itself, not after its TTL.
func TestHousekeepingEndsChannelSessions(t *testing.T) {
	clock := &testclock.Clock{}
	srv := servertest.StartWith(t, []server.Option{server.WithClock(clock.Now)}, func(cfg *server.Config) {
		cfg.ClientDeactivateThreshold = time.Hour
		cfg.HousekeepingInterval = time.Hour // runs only when the test says
		cfg.ChannelSessionTTL = 24 * time.Hour
	})
	c := servertest.Client(t, srv, servertest.ConnectJSON)
	ctx := wire.Context(t)
	attach := func() int64 {
		t.Helper()
		r := wire.NewReplica(t, c)
		resp, err := c.AttachChannel(ctx, connect.NewRequest(&api.AttachChannelRequest{ClientId: r.ID, ChannelKey: "room.1"}))
		require.NoError(t, err)
		return resp.Msg.GetSessionCount()
	}
	require.EqualValues(t, 1, attach(), "the silent client's session")

	// The first run records the client's calls; past the threshold and the
	// interval the next one finds it silent.
	require.NoError(t, srv.Housekeeper().RunOnce(ctx).Err)
	clock.Advance(3 * time.Hour)
	r := srv.Housekeeper().RunOnce(ctx)
	require.NoError(t, r.Err)
	require.EqualValues(t, 1, r.Deactivated)
	require.EqualValues(t, 1, attach(), "a new client counts itself only: the deactivated client's session is gone")
}

// gatedDB holds TouchClients until gate is closed, so a test can look at a
// node in the middle of its shutdown (housekeeping writes the activity it
// saw first).
type gatedDB struct {
	*memory.DB
	entered chan struct{}
	gate    chan struct{}
}

func (db *gatedDB) TouchClients(ctx context.Context, ids []string, at time.Time) error {
	select {
	case db.entered <- struct{}{}:
	default:
	}
	select {
	case <-db.gate:
	case <-ctx.Done():
		return ctx.Err()
	}
	return db.DB.TouchClients(ctx, ids, at)
}

// TestHealthzReportsDrainingAtOnce: once a node begins to shut down, GET
// /healthz answers 503 "draining" while the node still finishes its work,
// so a balancer's readiness check stops sending it calls.
func TestHealthzReportsDrainingAtOnce(t *testing.T) {
	db := &gatedDB{DB: memory.New(), entered: make(chan struct{}, 1), gate: make(chan struct{})}
	srv := servertest.Start(t, func(cfg *server.Config) {
		cfg.DB = db
		cfg.HousekeepingInterval = time.Hour
	})
	health := func() (int, string) {
		resp, err := http.Get(servertest.BaseURL(srv) + "/healthz")
		require.NoError(t, err)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	code, body := health()
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "ok", body)
	r := wire.NewReplica(t, servertest.Client(t, srv, servertest.ConnectJSON))
	r.MustAttach(wire.UniqueKey(t, "doc")) // activity to write at shutdown

	done := make(chan error, 1)
	go func() { done <- srv.Shutdown(context.Background()) }()
	select {
	case <-db.entered:
	case <-time.After(time.Minute): // a hang guard, not a synchronisation
		close(db.gate)
		t.Fatal("shutdown never wrote the activity it saw")
	}
	code, body = health()
	close(db.gate)
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Equal(t, "draining", body)
	require.NoError(t, <-done)
}
