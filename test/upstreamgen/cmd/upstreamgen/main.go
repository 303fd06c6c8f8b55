// Command upstreamgen writes a database in upstream Yorkie 0.7.17's layout
// (see package upstreamgen), or appends changes to one it wrote, for the
// figures of "yorkie migrate upstream":
//
//	upstreamgen -uri mongodb://127.0.0.1:27017 -db upstream -documents 10000 -changes 100
//	upstreamgen -uri mongodb://127.0.0.1:27017 -db upstream -append 1000 -append-documents 100
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"time"

	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"

	"github.com/yorkie-affinity/yorkie/test/upstreamgen"
)

func main() {
	uri := flag.String("uri", "mongodb://127.0.0.1:27017", "MongoDB connection URI")
	db := flag.String("db", "yorkie-meta", "database to write (it must not exist when generating)")
	var cfg upstreamgen.Config
	flag.IntVar(&cfg.Documents, "documents", 10000, "documents to generate")
	flag.IntVar(&cfg.ChangesPerDocument, "changes", 100, "server_seq of every generated document")
	flag.IntVar(&cfg.PresenceEvery, "presence-every", 10, "every n-th server_seq is a presence-only change, not stored (0: none)")
	flag.Int64Var(&cfg.SnapshotInterval, "snapshot-interval", 40, "server_seq distance between a document's snapshots (0: none)")
	flag.IntVar(&cfg.Round, "round", 10, "changes a document gets before the next one gets its own")
	appendN := flag.Int("append", 0, "append this many changes to an existing generated database instead")
	appendDocs := flag.Int("append-documents", 100, "spread the appended changes over this many documents")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *uri, *db, cfg, *appendN, *appendDocs); err != nil {
		fmt.Fprintln(os.Stderr, "upstreamgen:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, uri, name string, cfg upstreamgen.Config, appendN, appendDocs int) error {
	c, err := mongo.Connect(ctx, options.Client().ApplyURI(uri))
	if err != nil {
		return err
	}
	defer func() { _ = c.Disconnect(context.Background()) }()
	db := c.Database(name)
	start := time.Now()
	if appendN > 0 {
		s, err := upstreamgen.Load(ctx, db)
		if err != nil {
			return err
		}
		docs := min(max(appendDocs, 1), len(s.Docs))
		stride := len(s.Docs) / docs
		for i := range docs {
			n := appendN / docs
			if i < appendN%docs {
				n++
			}
			if err := s.Append(ctx, i*stride, n); err != nil {
				return err
			}
		}
		fmt.Printf("appended %d changes to %d documents in %s\n", appendN, docs, time.Since(start).Round(time.Millisecond))
		return nil
	}
	if _, err := upstreamgen.Generate(ctx, db, cfg); err != nil {
		return err
	}
	n, err := db.Collection("changes").EstimatedDocumentCount(ctx)
	if err != nil {
		return err
	}
	snaps, err := db.Collection("snapshots").EstimatedDocumentCount(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("generated %d documents of server_seq %d: %d stored changes, %d snapshots, in %s\n",
		cfg.Documents, cfg.ChangesPerDocument, n, snaps, time.Since(start).Round(time.Millisecond))
	return nil
}
