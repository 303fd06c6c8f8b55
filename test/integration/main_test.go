package integration_test

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"testing"

	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/backend/database/memory"
)

// childServerEnv, when set, makes the test binary run a server instead of the
// tests: benchmarks start it as a child process to measure its CPU apart from
// the client's.
const childServerEnv = "YORKIE_INTEGRATION_CHILD_SERVER"

// childAuthWebhookEnv, when set, is the URL of an auth webhook the child
// server's default project asks about every PushPull.
const childAuthWebhookEnv = "YORKIE_INTEGRATION_CHILD_AUTH_WEBHOOK"

// childStockEnv lists, comma-separated, the RPC port's fast paths the child
// server runs without: "http1" (net/http alone), "json" (protojson).
const childStockEnv = "YORKIE_INTEGRATION_CHILD_STOCK"

// childProfileEnv names a file the child server writes a CPU profile to, for
// looking into the server's share of a benchmark.
const childProfileEnv = "YORKIE_INTEGRATION_CHILD_CPUPROFILE"

func TestMain(m *testing.M) {
	if os.Getenv(childServerEnv) == "1" {
		os.Exit(runChildServer())
	}
	os.Exit(m.Run())
}

// runChildServer serves on a free loopback port, prints the address on
// stdout, and stops when stdin closes.
func runChildServer() int {
	db := memory.New()
	stock := strings.Split(os.Getenv(childStockEnv), ",")
	srv, err := server.New(context.Background(), server.Config{
		RPCConfig:       server.RPCConfig{Host: "127.0.0.1", DisableFastHTTP1: slices.Contains(stock, "http1"), DisableFastJSON: slices.Contains(stock, "json")},
		ProfilingConfig: server.ProfilingConfig{ProfilingPort: -1},
		BackendConfig:   server.BackendConfig{DB: db},
		Logger:          slog.New(slog.DiscardHandler),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if path := os.Getenv(childProfileEnv); path != "" {
		f, err := os.Create(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	ctx := context.Background()
	if err := srv.Start(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if url := os.Getenv(childAuthWebhookEnv); url != "" {
		p, err := db.FindProjectByID(ctx, database.DefaultProjectID)
		if err == nil {
			methods := []string{"PushPull"}
			_, err = db.UpdateProject(ctx, p.Owner, p.ID, &database.ProjectUpdate{AuthWebhookURL: &url, AuthWebhookMethods: &methods})
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	fmt.Println(srv.RPCAddr())
	// Block until the parent closes our stdin.
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	if err := srv.Shutdown(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
