// Package dbtest is the conformance suite every database.Database
// implementation must pass. It checks the behaviour the contract documents,
// including the guarantees that carry correctness without transactions: a
// gapless change log under racing writers, whole-or-nothing batches and
// fencing of old owners.
package dbtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/servertest/poll"
)

// NewDB returns an empty database for one test and arranges, with t.Cleanup,
// for it to be closed.
type NewDB func(t *testing.T) database.Database

// NewPair returns two handles on one empty database: for a server-backed
// implementation two clients, as two nodes would hold; for an in-process one
// the same value twice.
type NewPair func(t *testing.T) (database.Database, database.Database)

// Run runs the suite on databases made by newDB.
func Run(t *testing.T, newDB NewDB) {
	pair := func(t *testing.T) (database.Database, database.Database) {
		db := newDB(t)
		return db, db
	}
	t.Run("Clients", func(t *testing.T) { testClients(t, newDB) })
	t.Run("InactiveClients", func(t *testing.T) { testInactiveClients(t, newDB) })
	t.Run("Documents", func(t *testing.T) { testDocuments(t, newDB) })
	t.Run("FindByKey", func(t *testing.T) { testFindByKey(t, newDB) })
	t.Run("Attachments", func(t *testing.T) { testAttachments(t, newDB) })
	t.Run("ManyClientsOfOneDocument", func(t *testing.T) { testManyClientsOfOneDocument(t, newDB) })
	t.Run("Changes", func(t *testing.T) { testChanges(t, newDB) })
	t.Run("ChangeRanges", func(t *testing.T) { testChangeRanges(t, newDB) })
	t.Run("Fencing", func(t *testing.T) { testFencing(t, newDB) })
	t.Run("Contexts", func(t *testing.T) { testContexts(t, newDB) })
	t.Run("Snapshots", func(t *testing.T) { testSnapshots(t, newDB) })
	t.Run("ProjectScope", func(t *testing.T) { testProjectScope(t, newDB) })
	t.Run("Revisions", func(t *testing.T) { testRevisions(t, newDB) })
	t.Run("Compaction", func(t *testing.T) { testCompaction(t, newDB) })
	t.Run("Listing", func(t *testing.T) { testListing(t, newDB) })
	t.Run("Schemas", func(t *testing.T) { testSchemas(t, newDB) })
	t.Run("Strikes", func(t *testing.T) {
		testStrikes(t, func(t *testing.T) (database.Database, database.Database) {
			db := newDB(t)
			return db, db
		})
	})
	RunShared(t, pair)
}

// RunShared runs the part of the suite where two handles on one database act
// as two nodes: racing writers, two owners of a document, and visibility of
// one handle's writes to the other.
func RunShared(t *testing.T, newPair NewPair) {
	t.Run("Shared/Visibility", func(t *testing.T) { testVisibility(t, newPair) })
	t.Run("Shared/ConcurrentAppends", func(t *testing.T) { testConcurrentAppends(t, newPair) })
	t.Run("Shared/RacingRounds", func(t *testing.T) { testRacingRounds(t, newPair) })
	t.Run("Shared/RacingClaims", func(t *testing.T) { testRacingClaims(t, newPair) })
	t.Run("Shared/TwoOwners", func(t *testing.T) { testTwoOwners(t, newPair) })
	t.Run("Shared/Accounts", func(t *testing.T) { testAccounts(t, newPair) })
	t.Run("Shared/Members", func(t *testing.T) { testMembers(t, newPair) })
	t.Run("Shared/Strikes", func(t *testing.T) { testStrikes(t, newPair) })
}

var idPattern = regexp.MustCompile(`^[0-9a-f]{24}$`)

// testCtx bounds every call of a test, so a hung database fails the test
// instead of the whole run.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// unknownID is a well-formed ID that no database has handed out.
func unknownID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// result carries a call's two results to get, so that tests can write
// must(db.Call(...)).get(t).
type result[T any] struct {
	v   T
	err error
}

func must[T any](v T, err error) result[T] { return result[T]{v, err} }

// get returns the value, failing the test on an error.
func (r result[T]) get(t *testing.T) T {
	t.Helper()
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.v
}

func wantErr(t *testing.T, err, target error, what string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got error %v, want %v", what, err, target)
	}
}

// newDoc creates a document with a fresh key.
func newDoc(t *testing.T, ctx context.Context, db database.Database) *database.DocInfo {
	t.Helper()
	return must(db.FindOrCreateDocument(ctx, database.DefaultProjectID, "doc-"+unknownID())).get(t)
}

// body builds a change body that exercises most of the encoding: operations,
// presence, a version vector, bytes and unicode.
func body(actor string, clientSeq uint32, serverSeq int64, msg string) *api.Change {
	actorBytes, _ := hex.DecodeString(actor)
	return &api.Change{
		Id: &api.ChangeID{
			ClientSeq: clientSeq,
			ServerSeq: serverSeq,
			Lamport:   serverSeq*10 + int64(clientSeq),
			ActorId:   actorBytes,
			VersionVector: &api.VersionVector{Vector: map[string]int64{
				"AAAAAAAAAAAAAAAA": serverSeq, "b+/=": 7,
			}},
		},
		Message: msg,
		Operations: []*api.Operation{{Body: &api.Operation_Set_{Set: &api.Operation_Set{
			ParentCreatedAt: &api.TimeTicket{Lamport: 1, Delimiter: 2, ActorId: actorBytes},
			Key:             "k.$ü",
			Value:           &api.JSONElementSimple{Type: api.ValueType_VALUE_TYPE_STRING, Value: []byte{0, 1, 0xff}},
			ExecutedAt:      &api.TimeTicket{Lamport: serverSeq},
		}}}},
		PresenceChange: &api.PresenceChange{
			Type:     api.PresenceChange_CHANGE_TYPE_PUT,
			Presence: &api.Presence{Data: map[string]string{"cursor": `{"x":1}`}},
		},
	}
}

// batch builds changes server_seq first.. of one actor, client_seq from
// clientSeq, each with a message naming the batch.
func batch(actor string, first int64, clientSeq uint32, n int, tag string) []*database.Change {
	out := make([]*database.Change, n)
	for i := range out {
		seq := first + int64(i)
		cs := clientSeq + uint32(i)
		out[i] = &database.Change{
			ServerSeq: seq,
			ActorID:   actor,
			ClientSeq: cs,
			Body:      body(actor, cs, seq, fmt.Sprintf("%s#%d/%d", tag, i, n)),
		}
	}
	return out
}

// allChanges reads the whole log of a document.
func allChanges(t *testing.T, ctx context.Context, db database.Database, docID string) []*database.Change {
	t.Helper()
	return must(db.FindChanges(ctx, docID, 1, 1<<62)).get(t)
}

// assertGapless fails unless the log is server_seq 1..n in order.
func assertGapless(t *testing.T, log []*database.Change) {
	t.Helper()
	for i, c := range log {
		if c.ServerSeq != int64(i+1) {
			t.Fatalf("log position %d holds server_seq %d: the log is not one gapless sequence", i, c.ServerSeq)
		}
		if c.Body.GetId().GetServerSeq() != c.ServerSeq {
			t.Fatalf("change %d carries body server_seq %d", c.ServerSeq, c.Body.GetId().GetServerSeq())
		}
	}
}

func testClients(t *testing.T, newDB NewDB) {
	t.Run("ActivateMakesANewClientEachTime", func(t *testing.T) {
		ctx, db := testCtx(t), newDB(t)
		md := map[string]string{"name": "alice", "dotted.key": "$v"}
		a := must(db.ActivateClient(ctx, database.DefaultProjectID, "client-a", md)).get(t)
		if !idPattern.MatchString(a.ID) {
			t.Fatalf("client ID %q is not 24 lowercase hex characters", a.ID)
		}
		if a.Key != "client-a" || a.Status != database.ClientActivated || a.CreatedAt.IsZero() {
			t.Fatalf("activated client = %+v", a)
		}
		if fmt.Sprint(a.Metadata) != fmt.Sprint(md) {
			t.Fatalf("metadata = %v, want %v", a.Metadata, md)
		}
		// Knowing a key must not give anyone the client made with it.
		again := must(db.ActivateClient(ctx, database.DefaultProjectID, "client-a", nil)).get(t)
		if again.ID == a.ID {
			t.Fatalf("a second activation of the key gave the first client's ID %s", a.ID)
		}
		if again.Key != "client-a" || again.Status != database.ClientActivated || len(again.Metadata) != 0 {
			t.Fatalf("second activation = %+v", again)
		}
		found := must(db.FindClient(ctx, database.DefaultProjectID, a.ID)).get(t)
		if found.ID != a.ID || found.Key != "client-a" || found.Status != database.ClientActivated {
			t.Fatalf("FindClient = %+v", found)
		}
		if fmt.Sprint(found.Metadata) != fmt.Sprint(md) {
			t.Fatalf("metadata of the first client after a second activation = %v, want %v", found.Metadata, md)
		}
		if got := must(db.FindClient(ctx, database.DefaultProjectID, again.ID)).get(t); got.ID != again.ID || got.Key != "client-a" {
			t.Fatalf("FindClient of the second client = %+v", got)
		}
	})

	t.Run("IDsIncreaseInActivationOrder", func(t *testing.T) {
		ctx, db := testCtx(t), newDB(t)
		prev := ""
		for i := range 300 {
			// Keys repeat: a key used before gets a new, greater ID too.
			c := must(db.ActivateClient(ctx, database.DefaultProjectID, fmt.Sprintf("ordered-%d", i%7), nil)).get(t)
			if !idPattern.MatchString(c.ID) {
				t.Fatalf("client ID %q is not 24 lowercase hex characters", c.ID)
			}
			if c.ID <= prev {
				t.Fatalf("activation %d got ID %s, not above the previous %s", i, c.ID, prev)
			}
			prev = c.ID
		}
	})

	t.Run("ActivateConcurrently", func(t *testing.T) {
		ctx, db := testCtx(t), newDB(t)
		const n = 16
		ids := make([]string, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				c, err := db.ActivateClient(ctx, database.DefaultProjectID, "racing-client", nil)
				if err == nil {
					ids[i] = c.ID
				}
				errs[i] = err
			})
		}
		wg.Wait()
		seen := map[string]bool{}
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("activation %d: %v", i, errs[i])
			}
			if seen[ids[i]] {
				t.Fatalf("racing activations of one key share ID %s", ids[i])
			}
			seen[ids[i]] = true
		}
	})

	t.Run("Deactivate", func(t *testing.T) {
		ctx, db := testCtx(t), newDB(t)
		a := must(db.ActivateClient(ctx, database.DefaultProjectID, "client-d", nil)).get(t)
		d := must(db.DeactivateClient(ctx, database.DefaultProjectID, a.ID)).get(t)
		if d.ID != a.ID || d.Status != database.ClientDeactivated {
			t.Fatalf("DeactivateClient = %+v", d)
		}
		if got := must(db.FindClient(ctx, database.DefaultProjectID, a.ID)).get(t); got.Status != database.ClientDeactivated {
			t.Fatalf("status after deactivation = %s", got.Status)
		}
		re := must(db.ActivateClient(ctx, database.DefaultProjectID, "client-d", nil)).get(t)
		if re.ID == a.ID || re.Status != database.ClientActivated {
			t.Fatalf("activation after deactivation = %+v, want a new activated client, not %s", re, a.ID)
		}
		if got := must(db.FindClient(ctx, database.DefaultProjectID, a.ID)).get(t); got.Status != database.ClientDeactivated {
			t.Fatalf("the deactivated client came back as %s", got.Status)
		}
	})

	t.Run("Unknown", func(t *testing.T) {
		ctx, db := testCtx(t), newDB(t)
		for _, id := range []string{unknownID(), "not-a-client-id", ""} {
			_, err := db.FindClient(ctx, database.DefaultProjectID, id)
			wantErr(t, err, database.ErrClientNotFound, fmt.Sprintf("FindClient(%q)", id))
			_, err = db.DeactivateClient(ctx, database.DefaultProjectID, id)
			wantErr(t, err, database.ErrClientNotFound, fmt.Sprintf("DeactivateClient(%q)", id))
		}
	})
}

func testDocuments(t *testing.T, newDB NewDB) {
	t.Run("FindOrCreate", func(t *testing.T) {
		ctx, db := testCtx(t), newDB(t)
		d := must(db.FindOrCreateDocument(ctx, database.DefaultProjectID, "doc-1")).get(t)
		if !idPattern.MatchString(d.ID) {
			t.Fatalf("document ID %q is not 24 lowercase hex characters", d.ID)
		}
		if d.Key != "doc-1" || d.ServerSeq != 0 || d.Epoch != 0 || !d.RemovedAt.IsZero() || d.CreatedAt.IsZero() {
			t.Fatalf("new document = %+v", d)
		}
		if again := must(db.FindOrCreateDocument(ctx, database.DefaultProjectID, "doc-1")).get(t); again.ID != d.ID {
			t.Fatalf("same key got documents %s and %s", d.ID, again.ID)
		}
		if other := must(db.FindOrCreateDocument(ctx, database.DefaultProjectID, "doc-2")).get(t); other.ID == d.ID {
			t.Fatalf("different keys share document %s", d.ID)
		}
		found := must(db.FindDocument(ctx, database.DefaultProjectID, d.ID)).get(t)
		if found.ID != d.ID || found.Key != "doc-1" || !found.RemovedAt.IsZero() {
			t.Fatalf("FindDocument = %+v", found)
		}
	})

	t.Run("FindOrCreateConcurrently", func(t *testing.T) {
		ctx, db := testCtx(t), newDB(t)
		raceForOneID(t, "creations", func() (string, error) {
			d, err := db.FindOrCreateDocument(ctx, database.DefaultProjectID, "racing-doc")
			if err != nil {
				return "", err
			}
			return d.ID, nil
		})
	})

	t.Run("Unknown", func(t *testing.T) {
		ctx, db := testCtx(t), newDB(t)
		for _, id := range []string{unknownID(), "not-a-doc-id"} {
			_, err := db.FindDocument(ctx, database.DefaultProjectID, id)
			wantErr(t, err, database.ErrDocumentNotFound, fmt.Sprintf("FindDocument(%q)", id))
			_, err = db.ClaimDocument(ctx, id, 1)
			wantErr(t, err, database.ErrDocumentNotFound, fmt.Sprintf("ClaimDocument(%q)", id))
			err = db.RemoveDocument(ctx, id, 0)
			wantErr(t, err, database.ErrDocumentNotFound, fmt.Sprintf("RemoveDocument(%q)", id))
		}
	})

	t.Run("RemoveStartsNewDocument", func(t *testing.T) {
		ctx, db := testCtx(t), newDB(t)
		d := must(db.FindOrCreateDocument(ctx, database.DefaultProjectID, "doc-r")).get(t)
		if err := db.AppendChanges(ctx, d.ID, 0, batch(unknownID(), 1, 1, 2, "old")); err != nil {
			t.Fatal(err)
		}
		if err := db.RemoveDocument(ctx, d.ID, 0); err != nil {
			t.Fatal(err)
		}
		removed := must(db.FindDocument(ctx, database.DefaultProjectID, d.ID)).get(t)
		if removed.RemovedAt.IsZero() {
			t.Fatalf("removed document has no RemovedAt: %+v", removed)
		}
		fresh := must(db.FindOrCreateDocument(ctx, database.DefaultProjectID, "doc-r")).get(t)
		if fresh.ID == d.ID {
			t.Fatalf("the key of a removed document still finds it (%s)", d.ID)
		}
		if fresh.ServerSeq != 0 || !fresh.RemovedAt.IsZero() {
			t.Fatalf("new document of a reused key = %+v", fresh)
		}
		if log := allChanges(t, ctx, db, fresh.ID); len(log) != 0 {
			t.Fatalf("new document of a reused key has %d changes of the old one", len(log))
		}
		if again := must(db.FindOrCreateDocument(ctx, database.DefaultProjectID, "doc-r")).get(t); again.ID != fresh.ID {
			t.Fatalf("reused key got documents %s and %s", fresh.ID, again.ID)
		}
		// Removing the old document again must not release the new one's key.
		if err := db.RemoveDocument(ctx, d.ID, 0); err != nil {
			t.Fatalf("removing a removed document: %v", err)
		}
		if again := must(db.FindOrCreateDocument(ctx, database.DefaultProjectID, "doc-r")).get(t); again.ID != fresh.ID {
			t.Fatalf("removing the old document again moved the key from %s to %s", fresh.ID, again.ID)
		}
	})
}

func testAttachments(t *testing.T, newDB NewDB) {
	t.Run("UpsertAndFind", func(t *testing.T) {
		ctx, db := testCtx(t), newDB(t)
		c := must(db.ActivateClient(ctx, database.DefaultProjectID, "client", nil)).get(t)
		d := newDoc(t, ctx, db)
		_, err := db.FindAttachment(ctx, c.ID, d.ID)
		wantErr(t, err, database.ErrAttachmentNotFound, "FindAttachment before any update")

		a := &database.Attachment{
			ClientID: c.ID, DocID: d.ID, Status: database.Attached,
			ServerSeq: 3, ClientSeq: 7, AttachedAt: 2,
			VersionVector: map[string]int64{"AAECAwQFBgcICQoL": 5, "a+b/c==": 9},
		}
		if err := db.UpdateAttachment(ctx, a, 0); err != nil {
			t.Fatal(err)
		}
		got := must(db.FindAttachment(ctx, c.ID, d.ID)).get(t)
		assertAttachment(t, got, a)

		b := &database.Attachment{
			ClientID: c.ID, DocID: d.ID, Status: database.Detached,
			ServerSeq: 10, ClientSeq: 12, AttachedAt: 2,
			VersionVector: map[string]int64{"AAECAwQFBgcICQoL": 11},
		}
		if err := db.UpdateAttachment(ctx, b, 0); err != nil {
			t.Fatal(err)
		}
		assertAttachment(t, must(db.FindAttachment(ctx, c.ID, d.ID)).get(t), b)
		if list := must(db.ListAttachments(ctx, d.ID)).get(t); len(list) != 0 {
			t.Fatalf("ListAttachments lists a detached attachment: %+v", list[0])
		}
	})

	t.Run("Lists", func(t *testing.T) {
		ctx, db := testCtx(t), newDB(t)
		d1, d2, d3 := newDoc(t, ctx, db), newDoc(t, ctx, db), newDoc(t, ctx, db)
		var clients []string
		for i := range 4 {
			clients = append(clients, must(db.ActivateClient(ctx, database.DefaultProjectID, fmt.Sprintf("c%d", i), nil)).get(t).ID)
		}
		put := func(client, doc string, st database.AttachmentStatus) {
			t.Helper()
			if err := db.UpdateAttachment(ctx, &database.Attachment{ClientID: client, DocID: doc, Status: st}, 0); err != nil {
				t.Fatal(err)
			}
		}
		put(clients[0], d1.ID, database.Attached)
		put(clients[1], d1.ID, database.Attached)
		put(clients[2], d1.ID, database.Detached)
		put(clients[3], d1.ID, database.Removed)
		put(clients[0], d2.ID, database.Attached)
		put(clients[1], d2.ID, database.Detached)

		byDoc := func(doc string) []string {
			var out []string
			for _, a := range must(db.ListAttachments(ctx, doc)).get(t) {
				if a.DocID != doc || a.Status != database.Attached {
					t.Fatalf("ListAttachments(%s) returned %+v", doc, a)
				}
				out = append(out, a.ClientID)
			}
			sort.Strings(out)
			return out
		}
		byClient := func(client string) []string {
			var out []string
			for _, a := range must(db.ListClientAttachments(ctx, client)).get(t) {
				if a.ClientID != client || a.Status != database.Attached {
					t.Fatalf("ListClientAttachments(%s) returned %+v", client, a)
				}
				out = append(out, a.DocID)
			}
			sort.Strings(out)
			return out
		}
		eq := func(what string, got []string, want ...string) {
			t.Helper()
			sort.Strings(want)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("%s = %v, want %v", what, got, want)
			}
		}
		eq("attached clients of d1", byDoc(d1.ID), clients[0], clients[1])
		eq("attached clients of d2", byDoc(d2.ID), clients[0])
		eq("attached clients of d3", byDoc(d3.ID))
		eq("attached documents of c0", byClient(clients[0]), d1.ID, d2.ID)
		eq("attached documents of c1", byClient(clients[1]), d1.ID)
		eq("attached documents of c2", byClient(clients[2]))
		ever := func(doc string) []string {
			out := must(db.ListDocumentClients(ctx, doc)).get(t)
			sort.Strings(out)
			return out
		}
		eq("clients that ever attached d1", ever(d1.ID), clients...)
		eq("clients that ever attached d2", ever(d2.ID), clients[0], clients[1])
		eq("clients that ever attached d3", ever(d3.ID))

		count := func(client string) int { return must(db.CountClientAttachments(ctx, client)).get(t) }
		if got := []int{count(clients[0]), count(clients[1]), count(clients[2]), count(clients[3])}; fmt.Sprint(got) != "[2 1 0 0]" {
			t.Fatalf("attached counts of c0..c3 = %v, want [2 1 0 0]", got)
		}
		// Detaching and attaching again moves the count both ways, and a
		// history of detached documents does not count.
		put(clients[0], d1.ID, database.Detached)
		put(clients[0], d3.ID, database.Attached)
		put(clients[0], d3.ID, database.Attached)
		put(clients[1], d1.ID, database.Removed)
		eq("attached documents of c0 after moves", byClient(clients[0]), d2.ID, d3.ID)
		if got := []int{count(clients[0]), count(clients[1])}; fmt.Sprint(got) != "[2 0]" {
			t.Fatalf("attached counts of c0, c1 after moves = %v, want [2 0]", got)
		}
	})
}

func assertAttachment(t *testing.T, got, want *database.Attachment) {
	t.Helper()
	if got.ClientID != want.ClientID || got.DocID != want.DocID || got.Status != want.Status ||
		got.ServerSeq != want.ServerSeq || got.ClientSeq != want.ClientSeq || got.AttachedAt != want.AttachedAt ||
		fmt.Sprint(got.VersionVector) != fmt.Sprint(want.VersionVector) {
		t.Fatalf("attachment = %+v, want %+v", got, want)
	}
}

func testChanges(t *testing.T, newDB NewDB) {
	t.Run("RoundTripAndRanges", func(t *testing.T) {
		ctx, db := testCtx(t), newDB(t)
		d := newDoc(t, ctx, db)
		alice, bob := unknownID(), unknownID()
		want := append(batch(alice, 1, 1, 3, "a"), batch(bob, 4, 1, 2, "b")...)
		if err := db.AppendChanges(ctx, d.ID, 0, want[:3]); err != nil {
			t.Fatal(err)
		}
		if err := db.AppendChanges(ctx, d.ID, 0, want[3:]); err != nil {
			t.Fatal(err)
		}
		got := allChanges(t, ctx, db, d.ID)
		if len(got) != len(want) {
			t.Fatalf("log has %d changes, want %d", len(got), len(want))
		}
		for i := range want {
			if got[i].ServerSeq != want[i].ServerSeq || got[i].ActorID != want[i].ActorID || got[i].ClientSeq != want[i].ClientSeq {
				t.Fatalf("change %d = {%d %s %d}, want {%d %s %d}", i, got[i].ServerSeq, got[i].ActorID, got[i].ClientSeq,
					want[i].ServerSeq, want[i].ActorID, want[i].ClientSeq)
			}
			if !proto.Equal(got[i].Body, want[i].Body) {
				t.Fatalf("change %d body changed in storage:\n got %v\nwant %v", i, got[i].Body, want[i].Body)
			}
		}
		for _, r := range []struct{ from, to, first, last int64 }{
			{1, 5, 1, 5}, {2, 4, 2, 4}, {3, 3, 3, 3}, {4, 100, 4, 5}, {0, 2, 1, 2},
			{6, 10, 0, -1}, {0, 0, 0, -1}, {4, 3, 0, -1},
		} {
			cs := must(db.FindChanges(ctx, d.ID, r.from, r.to)).get(t)
			var seqs []int64
			for _, c := range cs {
				seqs = append(seqs, c.ServerSeq)
			}
			var wantSeqs []int64
			for s := r.first; s <= r.last; s++ {
				if s >= 1 {
					wantSeqs = append(wantSeqs, s)
				}
			}
			if fmt.Sprint(seqs) != fmt.Sprint(wantSeqs) {
				t.Fatalf("FindChanges(%d, %d) = %v, want %v", r.from, r.to, seqs, wantSeqs)
			}
		}
		if claimed := must(db.ClaimDocument(ctx, d.ID, 0)).get(t); claimed.ServerSeq != 5 {
			t.Fatalf("ClaimDocument after 5 changes: ServerSeq = %d", claimed.ServerSeq)
		}
		if err := db.AppendChanges(ctx, d.ID, 0, nil); err != nil {
			t.Fatalf("empty batch: %v", err)
		}
		if n := len(allChanges(t, ctx, db, d.ID)); n != 5 {
			t.Fatalf("log has %d changes after an empty batch, want 5", n)
		}
	})

	t.Run("MustStartAfterHead", func(t *testing.T) {
		ctx, db := testCtx(t), newDB(t)
		d := newDoc(t, ctx, db)
		actor := unknownID()
		err := db.AppendChanges(ctx, d.ID, 0, batch(actor, 2, 1, 1, "gap-on-empty"))
		wantErr(t, err, database.ErrConflict, "first batch starting at server_seq 2")
		if err := db.AppendChanges(ctx, d.ID, 0, batch(actor, 1, 1, 2, "ok")); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name  string
			first int64
			n     int
		}{
			{"taken", 1, 1}, {"taken-overlapping", 2, 3}, {"gap", 4, 2}, {"far-gap", 10, 1},
		} {
			err := db.AppendChanges(ctx, d.ID, 0, batch(actor, c.first, 50, c.n, c.name))
			wantErr(t, err, database.ErrConflict, fmt.Sprintf("batch %s at server_seq %d..%d with head 2", c.name, c.first, c.first+int64(c.n)-1))
		}
		log := allChanges(t, ctx, db, d.ID)
		assertGapless(t, log)
		if len(log) != 2 || log[0].Body.Message != "ok#0/2" || log[1].Body.Message != "ok#1/2" {
			t.Fatalf("refused batches left changes in the log: %v", messages(log))
		}
		if claimed := must(db.ClaimDocument(ctx, d.ID, 0)).get(t); claimed.ServerSeq != 2 {
			t.Fatalf("ServerSeq after refused batches = %d, want 2", claimed.ServerSeq)
		}

		bad := batch(actor, 3, 3, 2, "non-consecutive")
		bad[1].ServerSeq = 5
		bad[1].Body.Id.ServerSeq = 5
		if err := db.AppendChanges(ctx, d.ID, 0, bad); err == nil {
			t.Fatal("a batch with server_seq 3, 5 was accepted")
		}
		if n := len(allChanges(t, ctx, db, d.ID)); n != 2 {
			t.Fatalf("a refused non-consecutive batch left %d changes", n-2)
		}
	})

	t.Run("LastClientSeq", func(t *testing.T) {
		ctx, db := testCtx(t), newDB(t)
		d := newDoc(t, ctx, db)
		alice, bob, carol := unknownID(), unknownID(), unknownID()
		steps := [][]*database.Change{
			batch(alice, 1, 1, 2, "a1"), // seq 1-2: alice 1,2
			batch(bob, 3, 1, 1, "b1"),   // seq 3: bob 1
			batch(alice, 4, 3, 1, "a2"), // seq 4: alice 3
			batch(bob, 5, 2, 2, "b2"),   // seq 5-6: bob 2,3
		}
		for _, b := range steps {
			if err := db.AppendChanges(ctx, d.ID, 0, b); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range []struct {
			actor string
			after int64
			want  uint32
		}{
			{alice, 0, 3}, {alice, 3, 3}, {alice, 4, 0}, {alice, 1, 3},
			{bob, 0, 3}, {bob, 4, 3}, {bob, 5, 3}, {bob, 6, 0},
			{carol, 0, 0},
		} {
			if got := must(db.LastClientSeq(ctx, d.ID, c.actor, c.after)).get(t); got != c.want {
				t.Fatalf("LastClientSeq(actor %s, after %d) = %d, want %d", c.actor[:4], c.after, got, c.want)
			}
		}
	})
}

func messages(log []*database.Change) []string {
	out := make([]string, len(log))
	for i, c := range log {
		out[i] = c.Body.GetMessage()
	}
	return out
}

func testFencing(t *testing.T, newDB NewDB) {
	ctx, db := testCtx(t), newDB(t)
	d := newDoc(t, ctx, db)
	c := must(db.ActivateClient(ctx, database.DefaultProjectID, "fenced-client", nil)).get(t)
	actor := unknownID()

	if info := must(db.ClaimDocument(ctx, d.ID, 1)).get(t); info.Epoch != 1 || info.ServerSeq != 0 {
		t.Fatalf("claim with epoch 1 = %+v", info)
	}
	if err := db.AppendChanges(ctx, d.ID, 1, batch(actor, 1, 1, 3, "e1")); err != nil {
		t.Fatal(err)
	}
	info := must(db.ClaimDocument(ctx, d.ID, 2)).get(t)
	if info.Epoch != 2 || info.ServerSeq != 3 {
		t.Fatalf("claim with epoch 2 after 3 changes = Epoch %d ServerSeq %d, want 2 and 3", info.Epoch, info.ServerSeq)
	}
	if got := must(db.FindDocument(ctx, database.DefaultProjectID, d.ID)).get(t); got.Epoch != 2 {
		t.Fatalf("FindDocument after claim 2: Epoch = %d", got.Epoch)
	}
	if info := must(db.ClaimDocument(ctx, d.ID, 2)).get(t); info.Epoch != 2 {
		t.Fatalf("claiming again with the owner's epoch = %+v", info)
	}
	att := &database.Attachment{ClientID: c.ID, DocID: d.ID, Status: database.Attached, ServerSeq: 3, ClientSeq: 3}
	if err := db.UpdateAttachment(ctx, att, 2); err != nil {
		t.Fatal(err)
	}

	for _, old := range []int64{1, 0} {
		_, err := db.ClaimDocument(ctx, d.ID, old)
		wantErr(t, err, database.ErrFenced, fmt.Sprintf("ClaimDocument with epoch %d after 2", old))
		err = db.AppendChanges(ctx, d.ID, old, batch(actor, 4, 4, 2, "stale"))
		wantErr(t, err, database.ErrFenced, fmt.Sprintf("AppendChanges with epoch %d after 2", old))
		stale := *att
		stale.Status, stale.ServerSeq = database.Detached, 99
		err = db.UpdateAttachment(ctx, &stale, old)
		wantErr(t, err, database.ErrFenced, fmt.Sprintf("UpdateAttachment with epoch %d after 2", old))
		err = db.RemoveDocument(ctx, d.ID, old)
		wantErr(t, err, database.ErrFenced, fmt.Sprintf("RemoveDocument with epoch %d after 2", old))
	}

	if log := allChanges(t, ctx, db, d.ID); len(log) != 3 {
		t.Fatalf("fenced appends left changes: %v", messages(log))
	}
	assertAttachment(t, must(db.FindAttachment(ctx, c.ID, d.ID)).get(t), att)
	if got := must(db.FindDocument(ctx, database.DefaultProjectID, d.ID)).get(t); !got.RemovedAt.IsZero() || got.Epoch != 2 {
		t.Fatalf("document after fenced writes = %+v", got)
	}
	if again := must(db.FindOrCreateDocument(ctx, database.DefaultProjectID, d.Key)).get(t); again.ID != d.ID {
		t.Fatalf("a fenced RemoveDocument released the key: %s now names %s", d.Key, again.ID)
	}

	// The current owner still writes.
	if err := db.AppendChanges(ctx, d.ID, 2, batch(actor, 4, 4, 1, "e2")); err != nil {
		t.Fatalf("owner with epoch 2: %v", err)
	}
	if err := db.RemoveDocument(ctx, d.ID, 2); err != nil {
		t.Fatalf("owner with epoch 2 removing: %v", err)
	}
}

func testContexts(t *testing.T, newDB NewDB) {
	ctx, db := testCtx(t), newDB(t)
	c := must(db.ActivateClient(ctx, database.DefaultProjectID, "ctx-client", nil)).get(t)
	d := newDoc(t, ctx, db)

	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	check := func(name string, err error) {
		t.Helper()
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, database.ErrUnavailable) {
			t.Errorf("%s with an expired context: got %v, want DeadlineExceeded or ErrUnavailable", name, err)
		}
	}
	_, err := db.ActivateClient(expired, database.DefaultProjectID, "ctx-other", nil)
	check("ActivateClient", err)
	_, err = db.DeactivateClient(expired, database.DefaultProjectID, c.ID)
	check("DeactivateClient", err)
	_, err = db.FindClient(expired, database.DefaultProjectID, c.ID)
	check("FindClient", err)
	_, err = db.FindOrCreateDocument(expired, database.DefaultProjectID, "ctx-doc")
	check("FindOrCreateDocument", err)
	_, err = db.FindDocument(expired, database.DefaultProjectID, d.ID)
	check("FindDocument", err)
	_, err = db.ClaimDocument(expired, d.ID, 1)
	check("ClaimDocument", err)
	check("RemoveDocument", db.RemoveDocument(expired, d.ID, 0))
	_, err = db.FindAttachment(expired, c.ID, d.ID)
	check("FindAttachment", err)
	_, err = db.ListAttachments(expired, d.ID)
	check("ListAttachments", err)
	_, err = db.ListClientAttachments(expired, c.ID)
	check("ListClientAttachments", err)
	check("UpdateAttachment", db.UpdateAttachment(expired, &database.Attachment{ClientID: c.ID, DocID: d.ID, Status: database.Attached}, 0))
	check("AppendChanges", db.AppendChanges(expired, d.ID, 0, batch(unknownID(), 1, 1, 1, "late")))
	_, err = db.FindChanges(expired, d.ID, 1, 10)
	check("FindChanges", err)
	_, err = db.LastClientSeq(expired, d.ID, unknownID(), 0)
	check("LastClientSeq", err)

	// Nothing of the refused calls happened.
	if got := must(db.FindClient(ctx, database.DefaultProjectID, c.ID)).get(t); got.Status != database.ClientActivated {
		t.Errorf("client status after an expired DeactivateClient = %s", got.Status)
	}
	if got := must(db.FindDocument(ctx, database.DefaultProjectID, d.ID)).get(t); !got.RemovedAt.IsZero() || got.Epoch != 0 {
		t.Errorf("document after expired RemoveDocument/ClaimDocument = %+v", got)
	}
	if log := allChanges(t, ctx, db, d.ID); len(log) != 0 {
		t.Errorf("an expired AppendChanges stored %d changes", len(log))
	}
}

func testVisibility(t *testing.T, newPair NewPair) {
	a, b := newPair(t)
	ctx := testCtx(t)
	c := must(a.ActivateClient(ctx, database.DefaultProjectID, "seen-client", nil)).get(t)
	// Two nodes (or a node before and after a restart) hand out IDs in
	// activation order too.
	later := must(b.ActivateClient(ctx, database.DefaultProjectID, "seen-client", nil)).get(t)
	if later.ID <= c.ID {
		t.Fatalf("the second handle activated a client as %s, not above the first handle's %s", later.ID, c.ID)
	}
	if got := must(a.FindClient(ctx, database.DefaultProjectID, later.ID)).get(t); got.Key != "seen-client" {
		t.Fatalf("the first handle finds the second's client as %+v", got)
	}
	d := must(a.FindOrCreateDocument(ctx, database.DefaultProjectID, "seen-doc")).get(t)
	if got := must(b.FindOrCreateDocument(ctx, database.DefaultProjectID, "seen-doc")).get(t); got.ID != d.ID {
		t.Fatalf("the second handle found document %s, the first created %s", got.ID, d.ID)
	}
	if err := a.AppendChanges(ctx, d.ID, 0, batch(c.ID, 1, 1, 2, "from-a")); err != nil {
		t.Fatal(err)
	}
	if info := must(b.ClaimDocument(ctx, d.ID, 1)).get(t); info.ServerSeq != 2 {
		t.Fatalf("the second handle's claim sees ServerSeq %d, want 2", info.ServerSeq)
	}
	_, err := a.ClaimDocument(ctx, d.ID, 0)
	wantErr(t, err, database.ErrFenced, "the first handle after the second claimed epoch 1")
}

// wholeBatches checks a snapshot of a log being written: server_seq 1..n
// without gaps, and every batch in it whole (its changes carry "tag#i/n").
func wholeBatches(log []*database.Change) error {
	for k := 0; k < len(log); {
		if log[k].ServerSeq != int64(k+1) {
			return fmt.Errorf("server_seq %d at position %d: a gap", log[k].ServerSeq, k)
		}
		msg := log[k].Body.GetMessage()
		hash := strings.LastIndexByte(msg, '#')
		var i, n int
		if hash < 0 {
			return fmt.Errorf("change %d with message %q", log[k].ServerSeq, msg)
		}
		if _, err := fmt.Sscanf(msg[hash+1:], "%d/%d", &i, &n); err != nil || i != 0 {
			return fmt.Errorf("change %d (%q) where a batch should start", log[k].ServerSeq, msg)
		}
		if k+n > len(log) {
			return fmt.Errorf("batch %s cut after %d of its %d changes", msg[:hash], len(log)-k, n)
		}
		for j := range n {
			if want := fmt.Sprintf("%s#%d/%d", msg[:hash], j, n); log[k+j].Body.GetMessage() != want {
				return fmt.Errorf("change %d is %q, want %q", log[k+j].ServerSeq, log[k+j].Body.GetMessage(), want)
			}
		}
		k += n
	}
	return nil
}

// attempt is one AppendChanges call of a racing writer.
type attempt struct {
	tag   string
	first int64
	n     int
	err   error
}

// checkLog verifies a raced log: one gapless sequence; every accepted batch
// whole, in place and in order; nothing of a refused batch; nothing else.
func checkLog(t *testing.T, log []*database.Change, attempts []attempt) {
	t.Helper()
	assertGapless(t, log)
	byTag := make(map[string][]*database.Change)
	for _, c := range log {
		msg := c.Body.GetMessage()
		var tag string
		var i, n int
		tag = ""
		for k := len(msg) - 1; k >= 0; k-- {
			if msg[k] == '#' {
				tag = msg[:k]
				if _, err := fmt.Sscanf(msg[k+1:], "%d/%d", &i, &n); err != nil {
					t.Fatalf("change %d has message %q", c.ServerSeq, msg)
				}
				break
			}
		}
		if tag == "" {
			t.Fatalf("change %d has message %q", c.ServerSeq, msg)
		}
		byTag[tag] = append(byTag[tag], c)
	}
	accepted := 0
	for _, a := range attempts {
		stored := byTag[a.tag]
		delete(byTag, a.tag)
		if a.err != nil {
			if len(stored) != 0 {
				t.Fatalf("batch %s was refused (%v) but %d of its changes are in the log", a.tag, a.err, len(stored))
			}
			continue
		}
		accepted += a.n
		if len(stored) != a.n {
			t.Fatalf("batch %s was accepted with %d changes, the log holds %d", a.tag, a.n, len(stored))
		}
		for i, c := range stored {
			if c.ServerSeq != a.first+int64(i) || c.Body.GetMessage() != fmt.Sprintf("%s#%d/%d", a.tag, i, a.n) {
				t.Fatalf("batch %s: change %d is %q at server_seq %d, want server_seq %d", a.tag, i, c.Body.GetMessage(), c.ServerSeq, a.first+int64(i))
			}
		}
	}
	for tag := range byTag {
		t.Fatalf("the log holds changes of batch %s that nobody appended", tag)
	}
	if accepted != len(log) {
		t.Fatalf("accepted batches hold %d changes, the log %d", accepted, len(log))
	}
}

func testConcurrentAppends(t *testing.T, newPair NewPair) {
	a, b := newPair(t)
	ctx := testCtx(t)
	d := must(a.FindOrCreateDocument(ctx, database.DefaultProjectID, "racing-log")).get(t)
	const writers, wins = 8, 6

	var mu sync.Mutex
	var attempts []attempt
	var wg sync.WaitGroup
	start := make(chan struct{}) // released at once, so the writers collide
	for w := range writers {
		db := a
		if w%2 == 1 {
			db = b
		}
		wg.Go(func() {
			<-start
			actor := unknownID()
			clientSeq := uint32(1)
			for won, try := 0, 0; won < wins; try++ {
				if try > 400 {
					t.Errorf("writer %d: no progress after %d tries", w, try)
					return
				}
				info, err := db.ClaimDocument(ctx, d.ID, 0)
				if err != nil {
					t.Errorf("writer %d: reload head: %v", w, err)
					return
				}
				n := 1 + (w+try)%3
				tag := fmt.Sprintf("w%d-t%d", w, try)
				err = db.AppendChanges(ctx, d.ID, 0, batch(actor, info.ServerSeq+1, clientSeq, n, tag))
				mu.Lock()
				attempts = append(attempts, attempt{tag: tag, first: info.ServerSeq + 1, n: n, err: err})
				mu.Unlock()
				switch {
				case err == nil:
					won++
					clientSeq += uint32(n)
				case errors.Is(err, database.ErrConflict):
				default:
					t.Errorf("writer %d: AppendChanges: %v, want nil or ErrConflict", w, err)
					return
				}
			}
		})
	}
	// A reader on the other handle must never see part of a batch or a gap.
	readerDone := make(chan struct{})
	stopReader := make(chan struct{})
	reads := 0
	go func() {
		defer close(readerDone)
		for {
			select {
			case <-stopReader:
				return
			default:
			}
			seen, err := b.FindChanges(ctx, d.ID, 1, 1<<62)
			if err != nil {
				t.Errorf("reader: %v", err)
				return
			}
			reads++
			if err := wholeBatches(seen); err != nil {
				t.Errorf("reader saw %v", err)
				return
			}
		}
	}()
	close(start)
	wg.Wait()
	close(stopReader)
	<-readerDone
	if t.Failed() {
		return
	}
	log := allChanges(t, ctx, b, d.ID)
	checkLog(t, log, attempts)
	conflicts := 0
	for _, at := range attempts {
		if at.err != nil {
			conflicts++
		}
	}
	t.Logf("%d writers on two handles: %d changes in %d batches, %d conflicts; %d concurrent reads", writers, len(log), len(attempts)-conflicts, conflicts, reads)
	if info := must(a.ClaimDocument(ctx, d.ID, 0)).get(t); info.ServerSeq != int64(len(log)) {
		t.Fatalf("ClaimDocument ServerSeq = %d, log head %d", info.ServerSeq, len(log))
	}
}

// testRacingRounds makes every writer read the same head and then append at
// once, round after round: exactly one batch per round may win, whatever the
// implementation's timing.
func testRacingRounds(t *testing.T, newPair NewPair) {
	a, b := newPair(t)
	ctx := testCtx(t)
	d := must(a.FindOrCreateDocument(ctx, database.DefaultProjectID, "racing-rounds")).get(t)
	const writers, rounds = 6, 8
	var attempts []attempt
	for round := range rounds {
		heads := make([]int64, writers)
		errs := make([]error, writers)
		var read, done sync.WaitGroup
		read.Add(writers)
		for w := range writers {
			db := a
			if w%2 == 1 {
				db = b
			}
			done.Go(func() {
				info, err := db.ClaimDocument(ctx, d.ID, 0)
				if err != nil {
					errs[w] = err
					read.Done()
					return
				}
				heads[w] = info.ServerSeq
				read.Done()
				read.Wait() // every writer has read the head: append together
				n := 1 + (w+round)%3
				errs[w] = db.AppendChanges(ctx, d.ID, 0, batch(unknownID(), heads[w]+1, 1, n, fmt.Sprintf("r%d-w%d", round, w)))
			})
		}
		done.Wait()
		winners := 0
		for w := range writers {
			n := 1 + (w+round)%3
			attempts = append(attempts, attempt{tag: fmt.Sprintf("r%d-w%d", round, w), first: heads[w] + 1, n: n, err: errs[w]})
			switch {
			case errs[w] == nil:
				winners++
			case !errors.Is(errs[w], database.ErrConflict):
				t.Fatalf("round %d, writer %d: %v, want nil or ErrConflict", round, w, errs[w])
			}
			if heads[w] != heads[0] {
				t.Fatalf("round %d: writers read heads %d and %d with nobody appending", round, heads[0], heads[w])
			}
		}
		if winners != 1 {
			t.Fatalf("round %d: %d of %d writers appending at server_seq %d succeeded, want exactly 1", round, winners, writers, heads[0]+1)
		}
	}
	checkLog(t, allChanges(t, ctx, a, d.ID), attempts)
}

// testRacingClaims claims one document with epochs 1..n at once from two
// handles: the highest must win and every lower one be fenced afterwards,
// which an implementation that raises a stored epoch with a read-modify-write
// update can get wrong.
func testRacingClaims(t *testing.T, newPair NewPair) {
	a, b := newPair(t)
	ctx := testCtx(t)
	const n = 12
	for round := range 3 {
		d := must(a.FindOrCreateDocument(ctx, database.DefaultProjectID, fmt.Sprintf("racing-claims-%d", round))).get(t)
		errs := make([]error, n+1)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for e := 1; e <= n; e++ {
			db := a
			if e%2 == 1 {
				db = b
			}
			wg.Go(func() {
				<-start
				_, errs[e] = db.ClaimDocument(ctx, d.ID, int64(e))
			})
		}
		close(start)
		wg.Wait()
		for e := 1; e <= n; e++ {
			if errs[e] != nil && !errors.Is(errs[e], database.ErrFenced) {
				t.Fatalf("claim with epoch %d: %v", e, errs[e])
			}
		}
		if errs[n] != nil {
			t.Fatalf("the highest claim (epoch %d) failed: %v", n, errs[n])
		}
		for _, db := range []database.Database{a, b} {
			if got := must(db.FindDocument(ctx, database.DefaultProjectID, d.ID)).get(t); got.Epoch != n {
				t.Fatalf("epoch after racing claims 1..%d = %d", n, got.Epoch)
			}
		}
		for e := 1; e < n; e++ {
			_, err := b.ClaimDocument(ctx, d.ID, int64(e))
			wantErr(t, err, database.ErrFenced, fmt.Sprintf("claim with epoch %d after racing claims up to %d", e, n))
			err = a.AppendChanges(ctx, d.ID, int64(e), batch(unknownID(), 1, 1, 1, "late"))
			wantErr(t, err, database.ErrFenced, fmt.Sprintf("append with epoch %d after racing claims up to %d", e, n))
		}
	}
}

// owner pushes batches to a document with its epoch, reloading the head on
// ErrConflict, until stop is closed or it has made max attempts (0: no limit).
type owner struct {
	name  string
	db    database.Database
	epoch int64
	actor string

	mu       sync.Mutex
	attempts []attempt
	// after[i] says whether attempt i began after the rival's claim returned.
	after []bool
}

func (o *owner) push(ctx context.Context, t *testing.T, docID string, stop <-chan struct{}, claimed func() bool, max int) {
	clientSeq := uint32(1)
	head, err := o.reloadHead(ctx, docID)
	if err != nil {
		t.Errorf("%s: read head: %v", o.name, err)
		return
	}
	for try := 0; max == 0 || try < max; try++ {
		select {
		case <-stop:
			return
		default:
		}
		n := 1 + try%3
		tag := fmt.Sprintf("%s-t%d", o.name, try)
		began := claimed()
		err := o.db.AppendChanges(ctx, docID, o.epoch, batch(o.actor, head+1, clientSeq, n, tag))
		o.mu.Lock()
		o.attempts = append(o.attempts, attempt{tag: tag, first: head + 1, n: n, err: err})
		o.after = append(o.after, began)
		o.mu.Unlock()
		switch {
		case err == nil:
			head += int64(n)
			clientSeq += uint32(n)
		case errors.Is(err, database.ErrConflict), errors.Is(err, database.ErrFenced):
			if head, err = o.reloadHead(ctx, docID); err != nil {
				t.Errorf("%s: reload head: %v", o.name, err)
				return
			}
		default:
			t.Errorf("%s: AppendChanges: %v", o.name, err)
			return
		}
	}
}

// reloadHead reads the head from the log without claiming, as a fenced owner
// that has not noticed yet would.
func (o *owner) reloadHead(ctx context.Context, docID string) (int64, error) {
	log, err := o.db.FindChanges(ctx, docID, 1, 1<<62)
	if err != nil {
		return 0, err
	}
	return int64(len(log)), nil
}

func testTwoOwners(t *testing.T, newPair NewPair) {
	a, b := newPair(t)
	ctx := testCtx(t)
	d := must(a.FindOrCreateDocument(ctx, database.DefaultProjectID, "owned-doc")).get(t)
	old := &owner{name: "old", db: a, epoch: 1, actor: unknownID()}
	next := &owner{name: "new", db: b, epoch: 2, actor: unknownID()}
	if _, err := a.ClaimDocument(ctx, d.ID, old.epoch); err != nil {
		t.Fatal(err)
	}

	var claimedMu sync.Mutex
	claimedDone := false
	claimed := func() bool {
		claimedMu.Lock()
		defer claimedMu.Unlock()
		return claimedDone
	}
	stopOld := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { old.push(ctx, t, d.ID, stopOld, claimed, 0) })

	// Let the old owner store some batches, then take the document over
	// while it keeps pushing.
	poll.Until(t, 30*time.Second, "the old owner storing 6 changes", func() error {
		log, err := b.FindChanges(ctx, d.ID, 1, 1<<62)
		if err != nil {
			t.Fatal(err)
		}
		if len(log) < 6 {
			return fmt.Errorf("stored %d", len(log))
		}
		return nil
	})
	info, err := b.ClaimDocument(ctx, d.ID, next.epoch)
	if err != nil {
		t.Fatalf("new owner's claim: %v", err)
	}
	claimedMu.Lock()
	claimedDone = true
	claimedMu.Unlock()
	if info.ServerSeq < 6 {
		t.Fatalf("new owner's claim sees ServerSeq %d, at least 6 were stored before", info.ServerSeq)
	}
	wg.Go(func() { next.push(ctx, t, d.ID, nil, func() bool { return true }, 12) })

	// The old owner keeps trying until it has made a few attempts after the
	// claim.
	deadline := time.Now().Add(30 * time.Second)
	for {
		old.mu.Lock()
		triedAfter := 0
		for _, after := range old.after {
			if after {
				triedAfter++
			}
		}
		old.mu.Unlock()
		if triedAfter >= 5 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(stopOld)
	wg.Wait()
	if t.Failed() {
		return
	}

	afterClaim := 0
	for i, at := range old.attempts {
		if old.after[i] {
			afterClaim++
			if !errors.Is(at.err, database.ErrFenced) {
				t.Fatalf("old owner's batch %s began after the new claim returned: got %v, want ErrFenced", at.tag, at.err)
			}
		}
	}
	if afterClaim == 0 {
		t.Fatal("the old owner made no attempt after the new claim")
	}
	for _, at := range next.attempts {
		if errors.Is(at.err, database.ErrFenced) {
			t.Fatalf("new owner's batch %s fenced: %v", at.tag, at.err)
		}
	}
	log := allChanges(t, ctx, a, d.ID)
	checkLog(t, log, append(append([]attempt(nil), old.attempts...), next.attempts...))
	if _, err := a.ClaimDocument(ctx, d.ID, old.epoch); !errors.Is(err, database.ErrFenced) {
		t.Fatalf("old owner's claim after the takeover: got %v, want ErrFenced", err)
	}

	// The winner re-appends the old owner's last refused batch: its changes
	// are not lost, only sequenced again.
	var lost attempt
	for _, at := range old.attempts {
		if at.err != nil {
			lost = at
		}
	}
	head := int64(len(log))
	again := batch(old.actor, head+1, 900, lost.n, lost.tag+"-again")
	if err := b.AppendChanges(ctx, d.ID, next.epoch, again); err != nil {
		t.Fatalf("new owner re-appending the old owner's batch: %v", err)
	}
	got := must(a.FindChanges(ctx, d.ID, head+1, head+int64(lost.n))).get(t)
	if len(got) != lost.n {
		t.Fatalf("re-appended batch: %d changes stored, want %d", len(got), lost.n)
	}
	for i := range got {
		if got[i].ActorID != old.actor || !proto.Equal(got[i].Body, again[i].Body) {
			t.Fatalf("re-appended change %d = %v", i, got[i].Body)
		}
	}
	t.Logf("old owner: %d attempts (%d after the claim, all fenced); new owner: %d attempts; log %d changes",
		len(old.attempts), afterClaim, len(next.attempts), len(log))
}

// BenchAppendFind measures AppendChanges of a batch of size changes followed
// by FindChanges of it, the core of a push-pull. It reports changes/s.
func BenchAppendFind(b *testing.B, db database.Database, size int) {
	ctx := context.Background()
	d, err := db.FindOrCreateDocument(ctx, database.DefaultProjectID, "bench-"+unknownID())
	if err != nil {
		b.Fatal(err)
	}
	actor := unknownID()
	head := int64(0)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cs := batch(actor, head+1, uint32(head+1), size, "bench")
		if err := db.AppendChanges(ctx, d.ID, 0, cs); err != nil {
			b.Fatal(err)
		}
		got, err := db.FindChanges(ctx, d.ID, head+1, head+int64(size))
		if err != nil {
			b.Fatal(err)
		}
		if len(got) != size {
			b.Fatalf("read %d changes back, want %d", len(got), size)
		}
		head += int64(size)
	}
	b.ReportMetric(float64(b.N*size)/b.Elapsed().Seconds(), "changes/s")
}

// raceForOneID runs call from many goroutines at once; every call must
// succeed with the same ID, since they all name one document key.
func raceForOneID(t *testing.T, what string, call func() (string, error)) {
	t.Helper()
	const n = 16
	ids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { ids[i], errs[i] = call() })
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("%s %d: %v", what, i, errs[i])
		}
		if ids[i] != ids[0] {
			t.Fatalf("racing %s of one key got IDs %s and %s", what, ids[0], ids[i])
		}
	}
}
