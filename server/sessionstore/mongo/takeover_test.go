package mongo

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"

	"github.com/yorkie-affinity/yorkie/test/testenv"
)

// TestObserverNeedsAChangedBeat: a member is alive while its heartbeat
// changes, and dead only after this process has seen one heartbeat for
// longer than the TTL, whatever the record says of time.
func TestObserverNeedsAChangedBeat(t *testing.T) {
	now := time.Unix(1000, 0)
	o := newObserver()
	o.now = func() time.Time { return now }
	d := memberDoc{ID: "1:a", Addr: "a", Inc: 1, TTLMillis: 1000, Beat: 7}
	require.True(t, o.alive(d), "first sighting")
	now = now.Add(900 * time.Millisecond)
	require.True(t, o.alive(d), "same beat within the TTL")
	now = now.Add(200 * time.Millisecond)
	require.False(t, o.alive(d), "same beat for more than the TTL")
	d.Beat++
	require.True(t, o.alive(d), "a new beat")
	now = now.Add(1010 * time.Millisecond)
	require.True(t, o.alive(d), "within the 2% allowance")
	now = now.Add(20 * time.Millisecond)
	require.False(t, o.alive(d))
}

// TestStuckTakeoverMarker: a node that inserted the takeover marker of a
// dead binding and died before replacing it blocks the key for
// TakeoverTimeout only; the next attempt then takes it over.
func TestStuckTakeoverMarker(t *testing.T) {
	m := testenv.MongoURI(t)
	m.DropWhenDone(t, m.Database)
	s := newTestStore(t, m, Config{TakeoverTimeout: 300 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, err := s.Register(ctx, "node-a:1", time.Second)
	require.NoError(t, err)
	b, err := s.Register(ctx, "node-b:1", time.Second)
	require.NoError(t, err)
	x, err := s.Bind(ctx, "doc", a.Member())
	require.NoError(t, err)
	require.NoError(t, a.Revoke(ctx))

	// The stuck marker of x's version, held by nobody alive.
	d := slotDoc{ID: "doc", Addr: x.Owner.Addr, Inc: x.Owner.Incarnation, Ver: x.Epoch}
	_, err = s.markers.InsertOne(ctx, markerDoc{ID: s.bindingSlots.markerID(0, d), Addr: "node-c:1", Inc: 1})
	require.NoError(t, err)

	y, err := s.Bind(ctx, "doc", b.Member())
	require.NoError(t, err)
	require.Equal(t, b.Member(), y.Owner)
	require.Greater(t, y.Epoch, x.Epoch)
	n, err := s.markers.CountDocuments(ctx, bson.D{{Key: "_id", Value: s.bindingSlots.markerID(1, d)}})
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "the takeover went through the next attempt's marker")
}

// TestEpochsGrowAfterCounterLoss: values drawn after the counter's records
// are lost (a restore from an old backup) still grow, by the clock floor and
// by the replaced binding's epoch.
func TestEpochsGrowAfterCounterLoss(t *testing.T) {
	m := testenv.MongoURI(t)
	m.DropWhenDone(t, m.Database)
	s := newTestStore(t, m, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, err := s.Register(ctx, "node-a:1", time.Second)
	require.NoError(t, err)
	first, err := s.Bind(ctx, "doc", a.Member())
	require.NoError(t, err)
	require.NoError(t, s.Release(ctx, first))
	require.NoError(t, s.counter.Drop(ctx))
	b, err := s.Register(ctx, "node-b:1", time.Second)
	require.NoError(t, err)
	require.Greater(t, b.Member().Incarnation, a.Member().Incarnation)
	second, err := s.Bind(ctx, "doc", b.Member())
	require.NoError(t, err)
	require.Greater(t, second.Epoch, first.Epoch)
}
