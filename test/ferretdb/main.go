// Command ferretdb runs a MongoDB-wire server on SQLite for the database
// backend's tests, so that they need no MongoDB installation. It lives in its
// own module so that the server's module does not depend on FerretDB.
//
// With -postgresql-url it serves from PostgreSQL instead, for measuring at
// sizes where SQLite's scans swamp the server's own cost (see
// gin-twins.sql).
package main

import (
	"context"
	"flag"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/FerretDB/FerretDB/ferretdb"
)

func main() {
	listen := flag.String("listen-addr", "127.0.0.1:27017", "TCP address to serve the MongoDB wire protocol on")
	stateDir := flag.String("state-dir", ".", "directory holding the SQLite databases (ignored when -sqlite-url is set)")
	sqliteURL := flag.String("sqlite-url", "", "SQLite URI of the data directory, e.g. file:data/ (default: the state dir)")
	postgresURL := flag.String("postgresql-url", "", "serve from this PostgreSQL database instead of SQLite, e.g. postgres://127.0.0.1:5432/ferretdb")
	debug := flag.Bool("debug", false, "log at debug level")
	flag.Parse()

	level := slog.LevelInfo
	if *debug {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	url := *sqliteURL
	if url == "" {
		abs, err := filepath.Abs(*stateDir)
		if err != nil {
			logger.Error("resolve state dir", "err", err)
			os.Exit(2)
		}
		if err := os.MkdirAll(abs, 0o755); err != nil {
			logger.Error("create state dir", "err", err)
			os.Exit(2)
		}
		url = "file:" + abs + "/"
	}

	cfg := &ferretdb.Config{
		Listener:  ferretdb.ListenerConfig{TCP: *listen},
		Logger:    logger,
		Handler:   "sqlite",
		SQLiteURL: url,
	}
	if *postgresURL != "" {
		cfg.Handler, cfg.PostgreSQLURL, cfg.SQLiteURL = "postgresql", *postgresURL, ""
	}
	f, err := ferretdb.New(cfg)
	if err != nil {
		logger.Error("configure ferretdb", "err", err)
		os.Exit(1)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger.Info("serving", "uri", f.MongoDBURI(), "handler", cfg.Handler)
	if err := f.Run(ctx); err != nil && ctx.Err() == nil {
		logger.Error("ferretdb stopped", "err", err)
		os.Exit(1)
	}
}
