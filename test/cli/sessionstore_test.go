package cli_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/yorkie-affinity/yorkie/server/servertest/poll"
	"github.com/yorkie-affinity/yorkie/test/testenv"
)

// waitExit waits for p to exit on its own and returns its output. The bound
// only guards against a hang.
func waitExit(t *testing.T, p *testenv.Process) string {
	t.Helper()
	select {
	case <-p.Exited():
	case <-time.After(2 * time.Minute):
		t.Fatalf("%s did not exit:\n%s", p.Name, p.Output())
	}
	return p.Output()
}

// nodeArgs are a node's flags on free ports and one database.
func nodeArgs(t *testing.T, m *testenv.Mongo, extra ...string) (addr string, args []string) {
	port := testenv.FreePort(t)
	addr = "127.0.0.1:" + strconv.Itoa(port)
	return addr, append([]string{"server", "--rpc-port", strconv.Itoa(port), "--profiling-port", "-1",
		"--mongo-connection-uri", m.URI, "--mongo-database", m.Database}, extra...)
}

// With a MongoDB and no --session-store, nodes use the mongo store; a node
// that insists on the memory store on a database another node uses is
// refused at start-up, and so is a mongo-store node while a memory-store node
// uses the database.
func TestServerSessionStoreOnSharedDatabase(t *testing.T) {
	bin := yorkieBinary(t)
	m := testenv.MongoURI(t)
	m.DropWhenDone(t, m.Database)

	// A node with the memory store, alone on its database, starts.
	soloAddr, args := nodeArgs(t, m, "--session-store", "memory")
	solo := startYorkie(t, bin, soloAddr, args...)

	// A second node with the memory store is refused, naming the first.
	_, args = nodeArgs(t, m, "--session-store", "memory")
	out := waitExit(t, testenv.StartProcess(t, "yorkie-second-memory", bin, args...))
	assert.Contains(t, out, "--session-store memory")
	assert.Contains(t, out, "memory/", "the message names the live node")
	assert.Contains(t, out, soloAddr[strings.LastIndex(soloAddr, ":"):], "the message names the live node")
	assert.Contains(t, out, m.Database)

	// So is a node that would use the mongo store (no --session-store).
	_, args = nodeArgs(t, m)
	out = waitExit(t, testenv.StartProcess(t, "yorkie-mongo", bin, args...))
	assert.Contains(t, out, "session-store=mongo", "no store chosen, a MongoDB given: the mongo store")
	assert.Contains(t, out, "with --session-store memory")

	// Once the memory-store node is gone (killed: its record stays until
	// seen unchanged for its TTL), nodes with no store chosen start and
	// share the mongo store.
	solo.Kill()
	addrA, args := nodeArgs(t, m)
	a := startYorkie(t, bin, addrA, args...)
	addrB, args := nodeArgs(t, m)
	b := startYorkie(t, bin, addrB, args...)
	for _, p := range []*testenv.Process{a, b} {
		require.Contains(t, p.Output(), "session-store=mongo")
	}

	// And a memory-store node is refused while they run.
	_, args = nodeArgs(t, m, "--session-store", "memory")
	out = waitExit(t, testenv.StartProcess(t, "yorkie-late-memory", bin, args...))
	assert.Contains(t, out, "--session-store memory")
	assert.Contains(t, out, "mongo/")
	poll.UntilTrue(t, 30*time.Second, "both mongo-store nodes still serving", func() bool {
		select {
		case <-a.Exited():
			return false
		case <-b.Exited():
			return false
		default:
			return !strings.Contains(a.Output()+b.Output(), "level=ERROR")
		}
	})
}
