package docview_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"testing"
	"time"

	"connectrpc.com/connect"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/admin/docview"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/backend/database/memory"
	"github.com/yorkie-affinity/yorkie/server/backend/database/mongo"
	"github.com/yorkie-affinity/yorkie/server/document"
	"github.com/yorkie-affinity/yorkie/server/document/crdt"
	"github.com/yorkie-affinity/yorkie/server/servertest"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
	"github.com/yorkie-affinity/yorkie/test/testenv"
)

// forEachDatabase runs test on a server over the memory database and over a
// MongoDB-wire server (skipped without one, unless servers are required).
func forEachDatabase(t *testing.T, test func(t *testing.T, db database.Database, srv *server.Server)) {
	t.Run("memory", func(t *testing.T) {
		db := memory.New()
		test(t, db, servertest.Start(t, func(c *server.Config) { c.DB = db }))
	})
	t.Run("mongo", func(t *testing.T) {
		m := testenv.MongoURI(t)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		db, err := mongo.Dial(ctx, mongo.Config{URI: m.URI, Database: m.Database, Logger: slog.New(slog.DiscardHandler)})
		wire.Must(t, err, "dial the database")
		t.Cleanup(func() { _ = db.Close(context.Background()) })
		test(t, db, servertest.Start(t, func(c *server.Config) { c.DB = db }))
	})
}

// getView fetches the admin view of key from srv's profiling port and decodes
// the answer into out, returning the status.
func getView(t *testing.T, srv *server.Server, key string, out any) int {
	t.Helper()
	req, err := http.NewRequestWithContext(wire.Context(t), http.MethodGet,
		"http://"+srv.ProfilingAddr()+docview.DocumentsPath+key, nil)
	wire.Must(t, err, "build request")
	resp, err := http.DefaultClient.Do(req)
	wire.Must(t, err, "GET "+key)
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	wire.Must(t, json.NewDecoder(resp.Body).Decode(out), "decode answer")
	return resp.StatusCode
}

// edit records n changes of r, each setting one integer key on the root
// (see wire.Replica.NewChange), naming the root by its ticket as the SDK
// does: the initial lamport and the all-zero actor's 12 bytes.
func edit(r *wire.Replica, n int) {
	for range n {
		ch := r.NewChange(nil)
		ch.GetOperations()[0].GetSet().ParentCreatedAt = &api.TimeTicket{ActorId: make([]byte, 12)}
	}
}

// editedKeys is the root a replica's edits with client_seq from..to make (see
// wire.Replica.NewChange): one integer key per change.
func editedKeys(r *wire.Replica, from, to uint32) map[string]any {
	want := map[string]any{}
	for seq := from; seq <= to; seq++ {
		want[r.SetKey(seq)] = float64(seq)
	}
	return want
}

func TestDocumentView(t *testing.T) { forEachDatabase(t, testDocumentView) }

func testDocumentView(t *testing.T, _ database.Database, srv *server.Server) {
	c := servertest.Client(t, srv, servertest.ConnectJSON)
	a, b := wire.NewReplica(t, c), wire.NewReplica(t, c)
	key := wire.UniqueKey(t, "doc")
	a.MustAttach(key) // client_seq 1 is the attach's presence change
	b.MustAttach(key)
	edit(a, 5)
	a.MustPushPull()
	edit(b, 2)
	b.MustPushPull()

	var view docview.DocumentView
	if status := getView(t, srv, key, &view); status != http.StatusOK {
		t.Fatalf("status %d, want 200", status)
	}
	if view.Key != key || view.ID != a.DocID || view.Removed {
		t.Errorf("view names %q/%q removed=%v, want %q/%q live", view.Key, view.ID, view.Removed, key, a.DocID)
	}
	if view.ServerSeq != 9 {
		t.Errorf("server_seq %d, want 9 (two presence changes, seven edits)", view.ServerSeq)
	}
	if view.Snapshot != nil {
		t.Errorf("snapshot %+v, want none stored", view.Snapshot)
	}
	var root map[string]any
	wire.Must(t, json.Unmarshal(view.Root, &root), "decode root")
	want := editedKeys(a, 2, 6)
	for k, v := range editedKeys(b, 2, 3) {
		want[k] = v
	}
	if !reflect.DeepEqual(root, want) {
		t.Errorf("root %s, want the keys %v", view.Root, want)
	}
	if view.Size.Live.Data == 0 || view.Size.Live.Meta == 0 || view.Size.GC != (docview.DataSize{}) || view.GarbageLen != 0 {
		t.Errorf("size %+v, garbage %d: want live content and no garbage", view.Size, view.GarbageLen)
	}
}

func TestDocumentViewStartsFromSnapshot(t *testing.T) {
	forEachDatabase(t, testDocumentViewStartsFromSnapshot)
}

func testDocumentViewStartsFromSnapshot(t *testing.T, db database.Database, srv *server.Server) {
	c := servertest.Client(t, srv, servertest.ConnectJSON)
	r := wire.NewReplica(t, c)
	key := wire.UniqueKey(t, "doc")
	r.MustAttach(key)
	edit(r, 4)
	r.MustPushPull()

	// Store a snapshot of the first three changes, marked with a key the log
	// does not have, so the view shows whether it started from it.
	ctx := wire.Context(t)
	stored, err := db.FindChanges(ctx, r.DocID, 1, 3)
	wire.Must(t, err, "read changes")
	doc := document.New()
	bodies := []*api.Change{}
	for _, ch := range stored {
		bodies = append(bodies, ch.Body)
	}
	wire.Must(t, doc.ApplyChanges(bodies), "apply changes")
	mark := &api.Change{Id: &api.ChangeID{ClientSeq: 1, Lamport: 1000, ActorId: make([]byte, 12)},
		Operations: []*api.Operation{{Body: &api.Operation_Set_{Set: &api.Operation_Set{
			ParentCreatedAt: &api.TimeTicket{ActorId: make([]byte, 12)},
			Key:             "from-snapshot",
			Value:           &api.JSONElementSimple{CreatedAt: &api.TimeTicket{Lamport: 1000, ActorId: make([]byte, 12)}, Type: api.ValueType_VALUE_TYPE_NULL},
			ExecutedAt:      &api.TimeTicket{Lamport: 1000, ActorId: make([]byte, 12)},
		}}}}}
	wire.Must(t, doc.ApplyChanges([]*api.Change{mark}), "apply the mark")
	data, err := doc.Snapshot()
	wire.Must(t, err, "encode snapshot")
	info, err := db.FindDocument(ctx, database.DefaultProjectID, r.DocID)
	wire.Must(t, err, "find document")
	vv := doc.VersionVector()
	// The stored time is the database's clock at the save, so it lies
	// between these two readings (databases keep milliseconds), however
	// long the save and the view take.
	saving := time.Now().Truncate(time.Millisecond)
	wire.Must(t, db.SaveSnapshot(ctx, r.DocID, info.Epoch, &database.Snapshot{
		ServerSeq: 3, Lamport: vv[crdt.InitialActorID],
		VersionVector: document.VersionVectorToPB(vv).GetVector(), Data: data,
	}), "save snapshot")

	var view docview.DocumentView
	if status := getView(t, srv, key, &view); status != http.StatusOK {
		t.Fatalf("status %d, want 200", status)
	}
	viewed := time.Now()
	if view.Snapshot == nil || view.Snapshot.ServerSeq != 3 {
		t.Fatalf("snapshot %+v, want the one at server_seq 3", view.Snapshot)
	}
	if at := view.Snapshot.CreatedAt; at.Before(saving) || at.After(viewed) {
		t.Fatalf("snapshot created at %s, want between the save (%s) and the view (%s)", at, saving, viewed)
	}
	var root map[string]any
	wire.Must(t, json.Unmarshal(view.Root, &root), "decode root")
	want := editedKeys(r, 2, 5)
	want["from-snapshot"] = nil
	if view.ServerSeq != 5 || !reflect.DeepEqual(root, want) {
		t.Errorf("server_seq %d, root %s: want 5 and %v (the snapshot's state, then changes 4 and 5)", view.ServerSeq, view.Root, want)
	}
}

func TestDocumentViewRefusals(t *testing.T) {
	srv := servertest.Start(t)
	cases := []struct {
		key    string
		status int
		code   string
	}{
		{wire.UniqueKey(t, "never-used"), http.StatusNotFound, "document_not_found"},
		{"bad%20key", http.StatusBadRequest, "invalid_key"},
		{fmt.Sprintf("%0121d", 0), http.StatusBadRequest, "invalid_key"},
	}
	for _, tc := range cases {
		var body struct{ Error, Code string }
		if status := getView(t, srv, tc.key, &body); status != tc.status || body.Code != tc.code || body.Error == "" {
			t.Errorf("%s: status %d, body %+v; want %d with code %q and a message", tc.key, status, body, tc.status, tc.code)
		}
	}
	// Looking a key up creates no document: it is still unknown.
	var body struct{ Code string }
	if status := getView(t, srv, cases[0].key, &body); status != http.StatusNotFound {
		t.Errorf("second look-up: status %d, want 404", status)
	}
	got := viewCounts(t, srv)
	if want := map[string]float64{"document_not_found": 2, "invalid_key": 2}; !reflect.DeepEqual(got, want) {
		t.Errorf("yorkie_admin_document_views_total = %v, want %v", got, want)
	}
}

// viewCounts reads yorkie_admin_document_views_total by outcome from srv's metrics.
func viewCounts(t *testing.T, srv *server.Server) map[string]float64 {
	t.Helper()
	families, err := srv.Registry().Gather()
	wire.Must(t, err, "gather metrics")
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "yorkie_admin_document_views_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" {
					out[l.GetValue()] = m.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}

func TestDocumentViewProjects(t *testing.T) { forEachDatabase(t, testDocumentViewProjects) }

func testDocumentViewProjects(t *testing.T, db database.Database, srv *server.Server) {
	ctx := wire.Context(t)
	admin, err := db.FindUserByName(ctx, "admin")
	wire.Must(t, err, "find the admin user")
	app, err := db.CreateProject(ctx, admin.ID, "app")
	wire.Must(t, err, "create project")
	withKey := connect.WithInterceptors(connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			req.Header().Set("x-api-key", app.PublicKey)
			return next(ctx, req)
		}
	}))
	key := wire.UniqueKey(t, "doc")
	inApp := wire.NewReplica(t, servertest.Client(t, srv, servertest.ConnectJSON, withKey))
	inApp.MustAttach(key)
	edit(inApp, 3)
	inApp.MustPushPull()
	inDefault := wire.NewReplica(t, servertest.Client(t, srv, servertest.ConnectJSON))
	inDefault.MustAttach(key)

	for _, tc := range []struct {
		query, id, project string
	}{
		{"", inDefault.DocID, database.DefaultProjectID},
		{"?project=app", inApp.DocID, app.ID},
		{"?project=" + app.ID, inApp.DocID, app.ID},
	} {
		var view docview.DocumentView
		if status := getView(t, srv, key+tc.query, &view); status != http.StatusOK || view.ID != tc.id || view.ProjectID != tc.project {
			t.Errorf("%q: status %d, document %s of project %s; want %s of %s", tc.query, status, view.ID, view.ProjectID, tc.id, tc.project)
		}
	}
	var body struct{ Code string }
	if status := getView(t, srv, key+"?project=no-such-project", &body); status != http.StatusNotFound || body.Code != "project_not_found" {
		t.Errorf("unknown project: status %d, code %q; want 404 project_not_found", status, body.Code)
	}
}
