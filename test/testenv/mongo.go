package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	mongodrv "go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// Environment variables that choose the MongoDB-wire server of the tests.
const (
	// MongoURIEnv names a real MongoDB to use instead of FerretDB.
	MongoURIEnv = "YORKIE_TEST_MONGO_URI"
	// FerretDBBinEnv names the FerretDB test tool binary (default: bin/ferretdb
	// at the repository root, built from test/ferretdb).
	FerretDBBinEnv = "YORKIE_FERRETDB_BIN"
)

// Mongo is a MongoDB-wire server for one test and a database name no other
// test uses.
type Mongo struct {
	// URI is the connection string.
	URI string
	// Database is a fresh database name for this test; NewDatabase gives more.
	Database string
	// Addr is the host:port of a FerretDB started for the test ("" for an
	// external server).
	Addr string
	// StateDir holds the FerretDB data, kept across Stop and Restart.
	StateDir string

	bin  string
	proc *Process
	seq  atomic.Int64
}

// MongoURI returns a MongoDB-wire server: the one named by
// YORKIE_TEST_MONGO_URI if set, else a FerretDB started for the test on a free
// loopback port and stopped when the test ends. Without either it reports the
// server unavailable (skip, or fail when servers are required).
func MongoURI(t testing.TB) *Mongo {
	t.Helper()
	m := &Mongo{}
	m.Database = m.NewDatabase()
	if uri := os.Getenv(MongoURIEnv); uri != "" {
		m.URI = uri
		return m
	}

	bin := os.Getenv(FerretDBBinEnv)
	if bin == "" {
		root, err := repoRoot()
		if err != nil {
			Unavailable(t, "FerretDB: %v", err)
		}
		bin = filepath.Join(root, "bin", "ferretdb")
	}
	if _, err := os.Stat(bin); err != nil {
		Unavailable(t, "FerretDB test tool not built (cd test/ferretdb && go build -o ../../bin/ferretdb .), or set %s or %s: %v",
			FerretDBBinEnv, MongoURIEnv, err)
	}
	m.bin = bin
	m.Addr = fmt.Sprintf("127.0.0.1:%d", FreePort(t))
	m.StateDir = t.TempDir()
	m.URI = "mongodb://" + m.Addr + "/"
	m.Restart(t)
	return m
}

// NewDatabase returns another database name unique to this process and call,
// so tests sharing a server never see each other's data.
func (m *Mongo) NewDatabase() string {
	if m.Database == "" {
		var b [4]byte
		_, _ = rand.Read(b[:])
		return fmt.Sprintf("t%s_%d", hex.EncodeToString(b[:]), os.Getpid())
	}
	return fmt.Sprintf("%s_%d", m.Database, m.seq.Add(1))
}

// Managed reports whether the test started the server itself, so that it may
// stop and restart it.
func (m *Mongo) Managed() bool { return m.bin != "" }

// DropWhenDone drops database name when the test ends if the server is an
// external one; a FerretDB started for the test goes with its data anyway.
// A failed drop is logged: it leaves data behind but proves nothing wrong.
func (m *Mongo) DropWhenDone(t testing.TB, name string) {
	if m.Managed() {
		return
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := mongodrv.Connect(ctx, options.Client().ApplyURI(m.URI))
		if err != nil {
			t.Logf("drop test database %s: %v", name, err)
			return
		}
		defer func() { _ = c.Disconnect(ctx) }()
		if err := c.Database(name).Drop(ctx); err != nil {
			t.Logf("drop test database %s: %v", name, err)
		}
	})
}

// Stop kills the FerretDB started for the test; its data stays in StateDir.
func (m *Mongo) Stop() {
	if m.proc != nil {
		m.proc.Kill()
	}
}

// Restart starts FerretDB (again) on the same address with the same data and
// waits until it listens.
func (m *Mongo) Restart(t testing.TB) {
	t.Helper()
	if !m.Managed() {
		t.Fatalf("restart MongoDB-wire server: %s is not started by the test", m.URI)
	}
	m.Stop()
	m.proc = StartProcess(t, "ferretdb", m.bin, "-listen-addr", m.Addr, "-state-dir", m.StateDir)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := WaitListening(ctx, m.Addr); err != nil {
		t.Fatalf("FerretDB did not start: %v\n%s", err, m.proc.Output())
	}
}

// repoRoot walks up from the working directory to the directory holding the
// root module's go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && isRootModule(data) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("repository root (go.mod of the server module) not found above the working directory")
		}
		dir = parent
	}
}

// isRootModule tells the server's go.mod from nested tool modules'.
func isRootModule(gomod []byte) bool {
	for _, line := range strings.Split(string(gomod), "\n") {
		if strings.TrimSpace(line) == "module github.com/yorkie-affinity/yorkie" {
			return true
		}
	}
	return false
}
