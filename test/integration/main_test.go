package integration_test

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"testing"

	"github.com/yorkie-affinity/yorkie/server"
)

// childServerEnv, when set, makes the test binary run a server instead of the
// tests: benchmarks start it as a child process to measure its CPU apart from
// the client's.
const childServerEnv = "YORKIE_INTEGRATION_CHILD_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(childServerEnv) == "1" {
		os.Exit(runChildServer())
	}
	os.Exit(m.Run())
}

// runChildServer serves on a free loopback port, prints the address on
// stdout, and stops when stdin closes.
func runChildServer() int {
	srv, err := server.New(server.Config{
		Host:          "127.0.0.1",
		ProfilingPort: -1,
		Logger:        slog.New(slog.DiscardHandler),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx := context.Background()
	if err := srv.Start(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
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
