package integration_test

import (
	"testing"

	"connectrpc.com/connect"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/backend"
	"github.com/yorkie-affinity/yorkie/server/backend/database/dbtest"
	"github.com/yorkie-affinity/yorkie/server/document"
	"github.com/yorkie-affinity/yorkie/server/rpc/errinfo"
	"github.com/yorkie-affinity/yorkie/server/servertest"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
	"github.com/yorkie-affinity/yorkie/test/testenv"
)

// TestRefusedChangesGetTheirCode: over every protocol, a change with an
// empty operation, one naming an unknown parent and one removing the root are
// refused with invalid_argument and the code of the problem, nothing of them
// is stored, and other clients go on attaching and editing the document.
func TestRefusedChangesGetTheirCode(t *testing.T) {
	srv := servertest.Start(t)
	for _, p := range servertest.Protocols() {
		t.Run(p.String(), func(t *testing.T) {
			c := servertest.Client(t, srv, p)
			key := wire.UniqueKey(t, "poison")
			good := newReplica(t, c)
			good.MustAttach(key)
			good.Edit(1)
			good.MustPushPull()

			bad := wire.NewReplica(t, c)
			resp, err := bad.Attach(wire.Context(t), key)
			wire.Must(t, err, "attach")
			if got := resp.GetMaxSizePerDocument(); got != backend.DefaultMaxSizePerDocument {
				t.Fatalf("max_size_per_document %d, want %d", got, backend.DefaultMaxSizePerDocument)
			}
			poisons := []struct {
				code string
				op   func(at *api.TimeTicket) *api.Operation
			}{
				{errinfo.CodeInvalidOperation, func(*api.TimeTicket) *api.Operation { return &api.Operation{} }},
				{errinfo.CodeElementNotFound, func(at *api.TimeTicket) *api.Operation {
					return &api.Operation{Body: &api.Operation_Set_{Set: &api.Operation_Set{
						ParentCreatedAt: &api.TimeTicket{Lamport: 999, ActorId: at.ActorId},
						Key:             "x",
						Value:           &api.JSONElementSimple{CreatedAt: at, Type: api.ValueType_VALUE_TYPE_NULL},
						ExecutedAt:      at,
					}}}
				}},
				{errinfo.CodeRemoveRoot, func(at *api.TimeTicket) *api.Operation {
					return &api.Operation{Body: &api.Operation_Remove_{Remove: &api.Operation_Remove{
						ParentCreatedAt: wire.RootTicket(), CreatedAt: wire.RootTicket(), ExecutedAt: at,
					}}}
				}},
			}
			for _, poison := range poisons {
				ch := bad.NewChange(nil)
				ch.Operations = []*api.Operation{poison.op(&api.TimeTicket{Lamport: ch.Id.Lamport, ActorId: ch.Id.ActorId})}
				_, err := bad.PushPull(wire.Context(t))
				wantError(t, err, connect.CodeInvalidArgument, poison.code)
				// The client gives the change up, as a fixed client would.
				bad.Pending, bad.LastSeq = nil, bad.LastSeq-1
			}

			late := newReplica(t, c)
			late.MustAttach(key)
			late.Edit(1)
			late.MustPushPull()
			pulled := good.MustPushPull()
			if len(pulled.GetChanges()) < 2 {
				t.Fatalf("the first client pulled %d changes, want the others' attach and edit", len(pulled.GetChanges()))
			}
		})
	}
}

// TestRestartedNodeServesTheSameDocument: a node writes a document past two
// snapshot intervals on MongoDB and stops; a new node on the same database
// rebuilds it from the newest snapshot and the log after it, and a late
// joiner gets the same document as the log makes, as a snapshot.
func TestRestartedNodeServesTheSameDocument(t *testing.T) {
	m := testenv.MongoURI(t)
	start := func() *server.Server {
		t.Helper()
		return startNode(t, server.Config{BackendConfig: server.BackendConfig{DB: dbtest.DialMongo(t, m, m.Database), SnapshotInterval: 50, SnapshotThreshold: 20}})
	}

	first := start()
	key := wire.UniqueKey(t, "restart")
	writer := newReplica(t, servertest.Client(t, first, servertest.ConnectJSON))
	writer.MustAttach(key)
	for range 13 {
		writer.Edit(10)
		writer.MustPushPull()
	}
	stopNode(t, first)

	second := start()
	defer stopNode(t, second)
	late := newReplica(t, servertest.Client(t, second, servertest.ConnectJSON))
	resp, err := late.Attach(wire.Context(t), key)
	wire.Must(t, err, "late attach")
	snap := resp.GetChangePack().GetSnapshot()
	if snap == nil {
		t.Fatalf("late attach got %d changes and no snapshot", len(resp.GetChangePack().GetChanges()))
	}
	got, err := document.FromSnapshot(snap)
	wire.Must(t, err, "read the snapshot")

	db := dbtest.DialMongo(t, m, m.Database)
	stored, err := db.FindSnapshot(wire.Context(t), resp.GetDocumentId(), 1<<62)
	wire.Must(t, err, "find snapshot")
	// The attach's presence is change 1, then packs of 10: snapshots at 51
	// and 101.
	if stored.ServerSeq != 101 {
		t.Fatalf("newest stored snapshot at %d, want 101", stored.ServerSeq)
	}
	log, err := db.FindChanges(wire.Context(t), resp.GetDocumentId(), 1, 1<<62)
	wire.Must(t, err, "find changes")
	want := document.New()
	bodies := make([]*api.Change, 0, len(log))
	for _, c := range log {
		bodies = append(bodies, c.Body)
	}
	wire.Must(t, want.ApplyChanges(bodies), "replay the log")
	if got.JSON() != want.JSON() {
		t.Fatalf("restarted node serves\n%s\nthe log makes\n%s", got.JSON(), want.JSON())
	}
	late.Edit(1)
	late.MustPushPull()
}
