package clustertest_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"connectrpc.com/connect"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/clustertest"
	"github.com/yorkie-affinity/yorkie/server/project"
	"github.com/yorkie-affinity/yorkie/server/servertest/poll"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
)

// moveFixture is one document with a client through each of three nodes:
// near talks to the owner directly, the others go through non-owners.
type moveFixture struct {
	c      *clustertest.Cluster
	docKey string
	owner  clustertest.Owner
	near   *wire.Replica
	far    []*wire.Replica
	nearW  *wire.Stream[api.WatchResponse]
	farW   []*wire.Stream[api.WatchResponse]
}

func (f *moveFixture) all() []*wire.Replica { return append([]*wire.Replica{f.near}, f.far...) }

// newMoveFixture binds a document, attaches and watches it from every node,
// and has every client push a few changes.
func newMoveFixture(t *testing.T, c *clustertest.Cluster) *moveFixture {
	t.Helper()
	f := &moveFixture{c: c, docKey: wire.UniqueKey(t, "doc")}
	if _, err := c.Node(0).Affinity().Owner(wire.Context(t), f.docKey); err != nil {
		t.Fatalf("bind %s: %v", f.docKey, err)
	}
	f.owner = ownerOf(t, c, f.docKey)
	f.near = wire.NewReplica(t, f.owner.Node.ConnectJSON())
	f.near.MustAttach(f.docKey)
	f.nearW, _ = watchReady(t, f.near)
	for _, n := range otherNodes(c, f.owner.Node) {
		r := wire.NewReplica(t, n.ConnectJSON())
		r.MustAttach(f.docKey)
		w, _ := watchReady(t, r)
		f.far = append(f.far, r)
		f.farW = append(f.farW, w)
	}
	for _, r := range f.all() {
		r.Edit(2)
		r.MustPushPull()
	}
	return f
}

// wantUnavailable fails t unless a stream ended with code unavailable, which
// clients retry.
func wantUnavailable(t *testing.T, what string, err error) {
	t.Helper()
	if code := connect.CodeOf(err); err == nil || code != connect.CodeUnavailable {
		t.Errorf("%s ended with %v (code %s), want unavailable", what, err, connect.CodeOf(err))
	}
}

// continueOnNewOwner moves every client to a surviving node, syncs the
// changes they made meanwhile, re-opens the Watch streams, and checks that
// every client has every other client's changes and that the log is whole.
// It returns the new owner.
func (f *moveFixture) continueOnNewOwner(t *testing.T, survivors []*clustertest.Node) clustertest.Owner {
	t.Helper()
	f.near.C = survivors[0].ConnectJSON()
	for i, r := range f.far {
		r.C = survivors[i%len(survivors)].ConnectJSON()
	}
	for i, r := range f.all() {
		r.Edit(2)
		syncUntilAcked(r, fmt.Sprintf("client %d syncs after the move", i))
	}
	owner := ownerOf(t, f.c, f.docKey)
	if owner.Binding.Epoch <= f.owner.Binding.Epoch {
		t.Fatalf("new binding epoch %d, want more than the old %d", owner.Binding.Epoch, f.owner.Binding.Epoch)
	}
	for _, n := range survivors {
		if n == owner.Node {
			goto found
		}
	}
	t.Fatalf("document owned by node %d, which is not among the survivors", owner.Node.Index())
found:
	// Watch again, edit once more: everyone is told and pulls everything.
	rs := f.all()
	ws := make([]*wire.Stream[api.WatchResponse], len(rs))
	for i, r := range rs {
		ws[i], _ = watchReady(t, r)
	}
	rs[0].Edit(1)
	rs[0].MustPushPull()
	for i := 1; i < len(rs); i++ {
		awaitEvent(t, ws[i], changed, rs[0].ID)
	}
	for _, r := range rs {
		r.MustPushPull()
		for _, other := range rs {
			if other != r {
				if err := hasPulled(r, other); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	checkStored(t, checkLog(t, f.c.DB(), f.near.DocID), rs...)
	return owner
}

// checkOldEpochFenced writes one change to the log with the old owner's
// epoch, as a paused old owner would: the database must refuse it and the
// log must not change.
func checkOldEpochFenced(t *testing.T, f *moveFixture) {
	t.Helper()
	before := checkLog(t, f.c.DB(), f.near.DocID)
	late := &database.Change{
		ServerSeq: int64(len(before) + 1),
		ActorID:   f.near.ID,
		ClientSeq: f.near.LastSeq + 100,
		Body: &api.Change{Id: &api.ChangeID{
			ClientSeq: f.near.LastSeq + 100, ServerSeq: int64(len(before) + 1), ActorId: f.near.Actor,
			VersionVector: &api.VersionVector{},
		}},
	}
	err := f.c.DB().AppendChanges(wire.Context(t), f.near.DocID, f.owner.Binding.Epoch, []*database.Change{late})
	if !errors.Is(err, database.ErrFenced) {
		t.Fatalf("append with the old owner's epoch %d: %v, want ErrFenced", f.owner.Binding.Epoch, err)
	}
	if after := checkLog(t, f.c.DB(), f.near.DocID); len(after) != len(before) {
		t.Fatalf("log grew from %d to %d changes after a refused write", len(before), len(after))
	}
}

// TestGracefulStopMovesDocumentsAtOnce stops a document's owner gracefully
// with a TTL far longer than the whole test may run: its Watch streams
// (direct and relayed) end with unavailable, the binding is released, and
// the clients continue on a new owner. None of that could happen by the
// lease running out, so the stop itself must have freed the document; how
// long each step took is logged, not asserted.
func TestGracefulStopMovesDocumentsAtOnce(t *testing.T) {
	const ttl = time.Hour
	c := clustertest.Start(t, 3, clustertest.WithNodeTTL(ttl))
	f := newMoveFixture(t, c)
	for _, r := range f.all() {
		r.Edit(1) // not yet pushed when the owner goes
	}

	start := time.Now()
	c.Stop(f.owner.Node.Index())
	members, err := c.Store().Members(wire.Context(t))
	wire.Must(t, err, "list members")
	for _, m := range members {
		if m.Addr == f.owner.Node.Addr() {
			t.Errorf("the stopped owner %s is still a member (incarnation %d, bound epoch %d's owner was %d)",
				m.Addr, m.Incarnation, f.owner.Binding.Epoch, f.owner.Binding.Owner.Incarnation)
		}
	}
	// The stream on the stopped node ends; the streams other nodes relayed
	// to it follow the document to its new owner instead (see
	// TestDrainHandsDocumentsOn).
	err = f.nearW.End(t)
	wantUnavailable(t, "Watch stream on the stopped owner", err)
	t.Logf("Watch stream on the stopped owner ended %s after the stop", f.nearW.Ended().Sub(start).Round(time.Millisecond))
	f.continueOnNewOwner(t, otherNodes(c))
	t.Logf("clients continued on the new owner %s after the stop (TTL %s)", time.Since(start).Round(time.Millisecond), ttl)
	checkOldEpochFenced(t, f)
}

// TestCrashedOwnerIsReplacedAfterTTL crashes a document's owner: its
// streams break with a code clients retry, and once its lease has run out
// another node owns the document with a larger epoch and the clients
// continue with nothing lost.
func TestCrashedOwnerIsReplacedAfterTTL(t *testing.T) {
	// Short enough to wait for, long enough that the survivors' own renewals
	// (every TTL/3) keep up on a loaded machine.
	const ttl = 2 * time.Second
	c := clustertest.Start(t, 3, clustertest.WithNodeTTL(ttl))
	f := newMoveFixture(t, c)
	for _, r := range f.all() {
		r.Edit(1)
	}

	start := time.Now()
	c.Abort(f.owner.Node.Index())
	// The streams the survivors relayed to the crashed owner either end
	// with unavailable or, once the document has moved, follow it to its
	// new owner (rpc's followWatch); both are fine for the client.
	for i, w := range f.farW {
		select {
		case <-w.Done():
			wantUnavailable(t, fmt.Sprintf("relayed Watch stream %d", i), w.Err())
		default:
		}
	}
	if err := f.nearW.End(t); err == nil {
		t.Fatalf("direct Watch stream on the crashed owner ended without an error")
	}
	// Clients through the survivors keep trying; the document moves only
	// when the dead owner's lease is over.
	survivors := otherNodes(c)
	var moved time.Duration
	poll.Until(t, ttl+wire.WaitTimeout, "another node owns the document", func() error {
		f.far[0].C = survivors[0].ConnectJSON()
		_, _ = f.far[0].PushPull(wire.Context(t))
		o, err := c.OwnerOf(wire.Context(t), f.docKey)
		if err != nil {
			return err
		}
		if o.Node == f.owner.Node {
			return fmt.Errorf("still bound to the crashed node %d", o.Node.Index())
		}
		moved = time.Since(start)
		return nil
	})
	t.Logf("document taken over %s after the crash (TTL %s)", moved.Round(time.Millisecond), ttl)
	f.continueOnNewOwner(t, survivors)
	checkOldEpochFenced(t, f)
}

// TestPartitionedOwnerStopsServing cuts a document's owner off the session
// store while it keeps running: it ends the document's streams, refuses to
// serve it, another node takes the document over, and after the partition
// heals the binding stays where it is.
func TestPartitionedOwnerStopsServing(t *testing.T) {
	const ttl = 2 * time.Second
	c := clustertest.Start(t, 3, clustertest.WithNodeTTL(ttl))
	f := newMoveFixture(t, c)
	old := f.owner.Node
	for _, r := range f.all() {
		r.Edit(1)
	}

	c.Partition(old.Index())
	err := f.nearW.End(t)
	wantUnavailable(t, "direct Watch stream on the partitioned owner", err)
	// The streams other nodes relayed to it follow the document to its new
	// owner rather than end.
	// The partitioned node serves the document no more, directly or not.
	_, err = f.near.PushPull(wire.Context(t))
	if code := connect.CodeOf(err); code != connect.CodeUnavailable {
		t.Fatalf("PushPull at the partitioned node: %v (code %s), want unavailable", err, code)
	}
	inDefault := &database.ProjectInfo{ID: database.DefaultProjectID}
	_, err = old.Server().Backend().PushPull(wire.Context(t), inDefault, 0, f.near.ID, f.near.DocID, f.near.Pack(), false)
	if err == nil || errors.Is(err, project.ErrMissing) {
		t.Fatalf("the partitioned node's backend accepted a write (%v)", err)
	}

	survivors := otherNodes(c, old)
	c.WaitMembers(2)
	owner := f.continueOnNewOwner(t, survivors)
	if owner.Node == old {
		t.Fatalf("the partitioned node still owns the document")
	}
	checkOldEpochFenced(t, f)
	_, err = old.Server().Backend().PushPull(wire.Context(t), inDefault, 0, f.near.ID, f.near.DocID, f.near.Pack(), false)
	if err == nil || errors.Is(err, project.ErrMissing) {
		t.Fatalf("the partitioned node's backend accepted a write after the takeover (%v)", err)
	}
	checkLog(t, c.DB(), f.near.DocID)

	// Healing brings the node back without moving the document.
	c.Heal(old.Index())
	c.WaitMembers(3)
	for _, r := range f.all() {
		r.Edit(1)
		syncUntilAcked(r, "sync after the partition healed")
	}
	if now := ownerOf(t, c, f.docKey); now.Binding != owner.Binding {
		t.Fatalf("binding moved from %+v to %+v when the partitioned node came back", owner.Binding, now.Binding)
	}
	checkStored(t, checkLog(t, c.DB(), f.near.DocID), f.all()...)
}

// keyOwnedBy binds fresh document keys until one lands on node want.
func keyOwnedBy(t *testing.T, c *clustertest.Cluster, want *clustertest.Node) string {
	t.Helper()
	for range 200 {
		key := wire.UniqueKey(t, "doc")
		o, err := c.Node(0).Affinity().Owner(wire.Context(t), key)
		wire.Must(t, err, "bind "+key)
		if o.Addr == want.Addr() {
			return key
		}
	}
	t.Fatalf("no key placed on node %d in 200 tries", want.Index())
	return ""
}

// TestDeactivateDetachesAtEveryOwner deactivates, through node 0, a client
// attached to documents owned by nodes 1 and 2: the other watchers of each
// document see it leave and pull its presence clear, its attachments end,
// and its own streams close.
func TestDeactivateDetachesAtEveryOwner(t *testing.T) {
	c := clustertest.Start(t, 3)
	a := c.Node(0)
	x := wire.NewReplica(t, a.ConnectJSON())
	var (
		others []*wire.Replica
		xDocs  []*wire.Replica
		xW     []*wire.Stream[api.WatchResponse]
		oW     []*wire.Stream[api.WatchResponse]
	)
	for _, n := range []*clustertest.Node{c.Node(1), c.Node(2)} {
		key := keyOwnedBy(t, c, n)
		xd := *x
		xd.Pulled = map[string]*api.Change{}
		xd.MustAttach(key)
		w, _ := watchReady(t, &xd)
		xDocs, xW = append(xDocs, &xd), append(xW, w)

		o := wire.NewReplica(t, n.ConnectJSON())
		o.MustAttach(key)
		ow, watchers := watchReady(t, o)
		if len(watchers) != 2 {
			t.Fatalf("watchers of %s: %v, want both clients", key, watchers)
		}
		others, oW = append(others, o), append(oW, ow)
	}

	_, err := a.ConnectJSON().DeactivateClient(wire.Context(t), connect.NewRequest(&api.DeactivateClientRequest{ClientId: x.ID}))
	wire.Must(t, err, "deactivate through node 0")

	for i, o := range others {
		awaitEvent(t, oW[i], changed, x.ID)
		o.MustPushPull()
		// The leave is stored as x's presence clear. The watcher pulls that
		// change without the clear: it hears of the leave on its stream
		// (UNWATCHED, checked below), and a clear applied after x came back
		// would take x offline for it.
		log, err := c.DB().FindChanges(wire.Context(t), xDocs[i].DocID, 1, 1<<62)
		wire.Must(t, err, "read the log")
		var cleared bool
		for _, stored := range log {
			if stored.ActorID != x.ID || stored.Body.GetPresenceChange().GetType() != api.PresenceChange_CHANGE_TYPE_CLEAR {
				continue
			}
			cleared = true
			switch pulled, ok := o.Pulled[wire.ChangeKey(stored.Body)]; {
			case !ok:
				t.Errorf("watcher of document %d did not pull the deactivated client's leave", i)
			case pulled.GetPresenceChange() != nil:
				t.Errorf("watcher of document %d pulled the deactivated client's leave with its presence %v", i, pulled.GetPresenceChange())
			}
		}
		if !cleared {
			t.Errorf("document %d stored no presence clear of the deactivated client", i)
		}
		att, err := c.DB().FindAttachment(wire.Context(t), x.ID, xDocs[i].DocID)
		wire.Must(t, err, "find attachment")
		if att.Status != database.Detached {
			t.Errorf("deactivated client's attachment to document %d is %s, want detached", i, att.Status)
		}
	}
	until := time.Now().Add(wire.WaitTimeout)
	for i, w := range xW {
		select {
		case <-w.Done():
			if w.Err() == nil {
				t.Errorf("deactivated client's Watch stream %d ended without an error", i)
			}
		case <-time.After(time.Until(until)):
			t.Errorf("deactivated client's Watch stream %d (through node 0, owner node %d) still open %s after DeactivateClient", i, i+1, wire.WaitTimeout)
		}
	}
	for i := range others {
		if err := findEvent(oW[i], unwatched, x.ID, max(time.Until(until), time.Second)); err != nil {
			t.Errorf("watcher of document %d (owner node %d): %v", i, i+1, err)
		}
	}
}

// TestJoinKeepsBindings adds a node to a cluster whose documents are in use:
// no binding moves while its owner lives, and the documents' clients, old
// and new (through the new node), keep working.
func TestJoinKeepsBindings(t *testing.T) {
	c := clustertest.Start(t, 3)
	type doc struct {
		key     string
		owner   clustertest.Owner
		writer  *wire.Replica
		watcher *wire.Replica
		w       *wire.Stream[api.WatchResponse]
	}
	docs := make([]*doc, 12)
	for i := range docs {
		d := &doc{key: wire.UniqueKey(t, "doc")}
		d.writer = wire.NewReplica(t, c.Node(i%3).ConnectJSON())
		d.writer.MustAttach(d.key)
		d.watcher = wire.NewReplica(t, c.Node((i+1)%3).ConnectJSON())
		d.watcher.MustAttach(d.key)
		d.w, _ = watchReady(t, d.watcher)
		d.owner = ownerOf(t, c, d.key)
		docs[i] = d
	}

	joined := c.Add()
	c.WaitMembers(4)

	for i, d := range docs {
		if now := ownerOf(t, c, d.key); now.Binding != d.owner.Binding {
			t.Fatalf("document %d: binding moved from %+v to %+v when a node joined", i, d.owner.Binding, now.Binding)
		}
		d.writer.Edit(2)
		d.writer.MustPushPull()
		awaitEvent(t, d.w, changed, d.writer.ID)
		d.watcher.MustPushPull()
		if err := hasPulled(d.watcher, d.writer); err != nil {
			t.Fatalf("document %d: %v", i, err)
		}
		late := wire.NewReplica(t, joined.ConnectJSON())
		late.MustAttach(d.key)
		if got := late.Header.Get(sessionKeyHeader); got != d.owner.Node.SessionKey() {
			t.Fatalf("document %d through the new node: %s = %q, want the owner's %q", i, sessionKeyHeader, got, d.owner.Node.SessionKey())
		}
		if err := hasPulled(late, d.writer); err != nil {
			t.Fatalf("document %d through the new node: %v", i, err)
		}
		awaitEvent(t, d.w, changed, late.ID) // its attach presence
		checkStored(t, checkLog(t, c.DB(), d.writer.DocID), d.writer, d.watcher, late)
	}
}
