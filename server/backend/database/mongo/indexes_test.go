package mongo_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/event"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/backend/database/dbtest"
	"github.com/yorkie-affinity/yorkie/server/backend/database/mongo"
	"github.com/yorkie-affinity/yorkie/test/testenv"
)

// query is the shape of one query the server sent: the collection and the
// top-level fields its filter names.
type query struct {
	collection string
	command    string
	fields     string // sorted, comma-separated
}

// queryRecorder collects the shape of every query a DB sends.
type queryRecorder struct {
	mu      sync.Mutex
	queries map[query]int
}

func (r *queryRecorder) monitor() *event.CommandMonitor {
	return &event.CommandMonitor{Started: func(_ context.Context, e *event.CommandStartedEvent) {
		var filters []bson.Raw
		cmd := e.Command
		col, _ := cmd.Lookup(e.CommandName).StringValueOK()
		switch e.CommandName {
		case "find":
			// A find sorted by an indexed field walks that index (the
			// sort's keys count as named by the query).
			filters = append(filters, withSortKeys(docOf(cmd, "filter"), docOf(cmd, "sort")))
		case "count", "distinct", "findAndModify":
			filters = append(filters, docOf(cmd, "query"))
		case "update", "delete":
			key := map[string]string{"update": "updates", "delete": "deletes"}[e.CommandName]
			arr, _ := cmd.Lookup(key).ArrayOK()
			vals, _ := arr.Values()
			for _, v := range vals {
				if d, ok := v.DocumentOK(); ok {
					filters = append(filters, docOf(d, "q"))
				}
			}
		case "aggregate":
			arr, _ := cmd.Lookup("pipeline").ArrayOK()
			vals, _ := arr.Values()
			if len(vals) > 0 {
				if stage, ok := vals[0].DocumentOK(); ok {
					filters = append(filters, docOf(stage, "$match"))
				}
			}
		default:
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, f := range filters {
			r.queries[query{collection: col, command: e.CommandName, fields: filterFields(f)}]++
		}
	}}
}

// withSortKeys adds the keys of sort to filter, as fields with no condition.
func withSortKeys(filter, sort bson.Raw) bson.Raw {
	keys, _ := sort.Elements()
	if len(keys) == 0 {
		return filter
	}
	var d bson.D
	if err := bson.Unmarshal(filter, &d); err != nil && len(filter) > 0 {
		return filter
	}
	for _, k := range keys {
		d = append(d, bson.E{Key: k.Key(), Value: true})
	}
	out, err := bson.Marshal(d)
	if err != nil {
		return filter
	}
	return out
}

func docOf(d bson.Raw, key string) bson.Raw {
	v, err := d.LookupErr(key)
	if err != nil {
		return nil
	}
	doc, _ := v.DocumentOK()
	return doc
}

// filterFields lists the top-level fields of a filter, those of its $and
// and $or clauses included.
func filterFields(f bson.Raw) string {
	elems, _ := f.Elements()
	var out []string
	for _, e := range elems {
		switch e.Key() {
		case "$and", "$or":
			arr, _ := e.Value().ArrayOK()
			vals, _ := arr.Values()
			for _, v := range vals {
				if d, ok := v.DocumentOK(); ok && len(d) > 0 {
					out = append(out, strings.Split(filterFields(d), ",")...)
				}
			}
		default:
			out = append(out, e.Key())
		}
	}
	sort.Strings(out)
	return strings.Join(slices.Compact(out), ",")
}

// TestEveryQueryHasAnIndex runs the conformance suite on a database whose
// every command is watched, then checks each query it sent: some index of
// its collection (the _id index included) must lead with a field the filter
// or the sort names, so no query of the server scans a collection on MongoDB. (FerretDB's
// SQLite backend answers only _id lookups from an index; see the package
// comment.)
func TestEveryQueryHasAnIndex(t *testing.T) {
	m := testenv.MongoURI(t)
	rec := &queryRecorder{queries: map[query]int{}}
	var names []string
	dial := func(t *testing.T, name string) database.Database {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		db, err := mongo.Dial(ctx, mongo.Config{
			URI: m.URI, Database: name, ConnectTimeout: 5 * time.Second,
			Logger:  slog.New(slog.DiscardHandler),
			Monitor: rec.monitor(),
		})
		require.NoError(t, err)
		t.Cleanup(func() { _ = db.Close(context.Background()) })
		m.DropWhenDone(t, name)
		return db
	}
	t.Run("suite", func(t *testing.T) {
		dbtest.Run(t, func(t *testing.T) database.Database {
			name := m.NewDatabase()
			names = append(names, name)
			return dial(t, name)
		})
	})

	// The indexes every collection has, read from a database the server made.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name := m.NewDatabase()
	dial(t, name)
	raw := rawDatabase(t, ctx, m, name)
	leading := map[string][]string{} // collection -> first field of each index
	cols, err := raw.ListCollectionNames(ctx, bson.D{})
	require.NoError(t, err)
	for _, c := range cols {
		specs, err := raw.Collection(c).Indexes().ListSpecifications(ctx)
		require.NoError(t, err)
		leading[c] = []string{"_id"}
		for _, s := range specs {
			elems, _ := s.KeysDocument.Elements()
			if len(elems) > 0 {
				leading[c] = append(leading[c], elems[0].Key())
			}
		}
	}

	// Queries that scan on purpose, with why.
	exempt := map[query]string{
		{collection: "clients", command: "update", fields: "project_id"}: "the start-up migration of records written before projects: once, for records without the field",
	}
	var missing []string
	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.NotEmpty(t, rec.queries, "the suite sent queries")
	for q, n := range rec.queries {
		if _, ok := exempt[q]; ok {
			continue
		}
		fields := strings.Split(q.fields, ",")
		idx := leading[q.collection]
		if idx == nil {
			idx = []string{"_id"} // made by the first insert: the _id index alone
		}
		served := slices.ContainsFunc(idx, func(f string) bool { return slices.Contains(fields, f) })
		if !served {
			missing = append(missing, fmt.Sprintf("%s %s on {%s} (sent %d times); indexes lead with %v", q.command, q.collection, q.fields, n, idx))
		}
	}
	sort.Strings(missing)
	require.Empty(t, missing, "queries no index serves")
	t.Logf("%d query shapes over %d collections, each served by an index", len(rec.queries), len(leading))
}
