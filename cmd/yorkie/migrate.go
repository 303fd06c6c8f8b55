package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sort"
	"syscall"
	"time"

	"github.com/yorkie-affinity/yorkie/server/backend/database/mongo"
	"github.com/yorkie-affinity/yorkie/server/migrate"
)

const migrateUsage = `usage: yorkie migrate upstream --from-mongo-connection-uri URI [--from-mongo-yorkie-database yorkie-meta]
                               --mongo-connection-uri URI [--mongo-yorkie-database yorkie-meta] [--verify]

Imports an upstream Yorkie 0.7.17 MongoDB database into this server's database:
users, projects with their keys and settings, members, pending invites, schemas, documents with their
whole history and snapshots, revisions, clients and their attachments with their
checkpoints, all with upstream's IDs. The source is only read. Run it again to
resume an interrupted import or to copy what changed since the last run.
--verify writes nothing: it rebuilds every imported document and compares it with
upstream's snapshot.
`

// runMigrate runs "yorkie migrate upstream".
func runMigrate(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "upstream" {
		fmt.Fprint(stderr, migrateUsage)
		return 2
	}
	fs := flag.NewFlagSet("yorkie migrate upstream", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, migrateUsage); fs.PrintDefaults() }
	fromURI := fs.String("from-mongo-connection-uri", "", "MongoDB connection URI of the upstream Yorkie database (read only)")
	fromDB := fs.String("from-mongo-yorkie-database", migrate.DefaultSourceDatabase, "database name of the upstream Yorkie database")
	toURI := fs.String("mongo-connection-uri", "", "MongoDB connection URI of this server's database")
	var toDB string
	fs.StringVar(&toDB, "mongo-yorkie-database", mongo.DefaultDatabase, "database name of this server's database")
	fs.StringVar(&toDB, "mongo-database", mongo.DefaultDatabase, "same as --mongo-yorkie-database")
	progressEvery := fs.Duration("progress-interval", time.Second, "how often a progress line is printed (documents and changes done, rate, time left)")
	verify := fs.Bool("verify", false, "write nothing: rebuild every imported document and compare it with upstream's snapshot")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "yorkie migrate upstream: unexpected arguments %v\n", fs.Args())
		return 2
	}
	if *fromURI == "" {
		fmt.Fprintln(stderr, "yorkie migrate upstream: --from-mongo-connection-uri is required")
		return 2
	}
	if *toURI == "" {
		fmt.Fprintln(stderr, "yorkie migrate upstream: --mongo-connection-uri is required: the memory database ends with the command, so it cannot receive an import")
		return 2
	}
	if *toURI == *fromURI && toDB == *fromDB {
		fmt.Fprintln(stderr, "yorkie migrate upstream: the source and the target are the same database")
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	target, err := mongo.Dial(ctx, mongo.Config{URI: *toURI, Database: toDB, Logger: logger})
	if err != nil {
		fmt.Fprintf(stderr, "yorkie migrate upstream: target: %v\n", err)
		return 1
	}
	defer func() { _ = target.Close(context.WithoutCancel(ctx)) }()
	im, err := migrate.Open(ctx, migrate.Config{
		SourceURI: *fromURI, SourceDatabase: *fromDB, Target: target, Progress: stderr, ProgressEvery: *progressEvery, Logger: logger,
	})
	if err != nil {
		fmt.Fprintf(stderr, "yorkie migrate upstream: %v\n", err)
		return 1
	}
	defer func() { _ = im.Close(context.WithoutCancel(ctx)) }()

	if *verify {
		rep, err := im.Verify(ctx)
		if err != nil {
			fmt.Fprintf(stderr, "yorkie migrate upstream: %v\n", err)
			return 1
		}
		for _, d := range rep.Differences {
			fmt.Fprintf(stdout, "DIFFERENCE %s\n", d)
		}
		fmt.Fprintf(stdout, "verified %d documents (%d against upstream snapshots): %d differences\n",
			rep.Documents, rep.Compared, len(rep.Differences))
		if len(rep.Differences) > 0 {
			return 1
		}
		return 0
	}

	rep, err := im.Run(ctx)
	printReport(stdout, rep)
	if err != nil {
		fmt.Fprintf(stderr, "yorkie migrate upstream: %v\n", err)
		return 1
	}
	return 0
}

// printReport writes what a run saw and wrote, one line each.
func printReport(w io.Writer, r *migrate.Report) {
	if r == nil {
		return
	}
	fmt.Fprintf(w, "source: %d users, %d projects, %d members, %d invites, %d schemas, %d documents (%d unchanged), %d revisions, %d clients (%d waiting for a failed document)\n",
		r.Users, r.Projects, r.Members, r.Invites, r.Schemas, r.Documents, r.DocumentsUnchanged, r.Revisions, r.Clients, r.ClientsDeferred)
	fmt.Fprintf(w, "changes copied: %d, placeholders for unstored presence-only changes: %d\n", r.ChangesCopied, r.Placeholders)
	kinds := make([]string, 0, len(r.Written))
	for k := range r.Written {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	total := 0
	for _, k := range kinds {
		fmt.Fprintf(w, "written %s: %d\n", k, r.Written[k])
		total += r.Written[k]
	}
	fmt.Fprintf(w, "written in all: %d\n", total)
	for _, f := range r.Failures {
		fmt.Fprintf(w, "FAILED %v\n", f)
	}
}
