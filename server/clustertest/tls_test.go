package clustertest_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/certfile/certtest"
	"github.com/yorkie-affinity/yorkie/server/clustertest"
	"github.com/yorkie-affinity/yorkie/server/servertest"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
)

// tlsNodes gives every node a certificate of ca and makes it verify the
// others with caFile.
func tlsNodes(t *testing.T, ca *certtest.CA, caFile func(i int) string) clustertest.Option {
	dir := t.TempDir()
	return clustertest.WithConfig(func(i int, cfg *server.Config) {
		files, _ := ca.WriteLeaf(t, dir, fmt.Sprintf("node%d", i), certtest.Leaf{})
		cfg.RPCCertFile, cfg.RPCKeyFile, cfg.ClusterCAFile = files.Cert, files.Key, caFile(i)
	})
}

// TestClusterOverTLS: nodes whose RPC ports serve TLS call each other over
// TLS: unary calls forwarded to the owner, a Watch stream relayed from it,
// and the ClusterService's detach on deactivation; clients on different
// nodes converge.
func TestClusterOverTLS(t *testing.T) {
	ca := certtest.NewCA(t, "cluster CA")
	caFile := ca.WriteCA(t, t.TempDir(), "ca")
	c := clustertest.Start(t, 3, tlsNodes(t, ca, func(int) string { return caFile }))
	key := keyOwnedBy(t, c, c.Node(1))
	a := wire.NewReplica(t, servertest.TLSClient(t, c.Node(0).Server(), servertest.ConnectJSON, ca.Pool()))
	b := wire.NewReplica(t, servertest.TLSClient(t, c.Node(2).Server(), servertest.GRPC, ca.Pool()))
	a.MustAttach(key)
	b.MustAttach(key)
	watch := b.Watch(t)
	watch.Next(t)
	a.Edit(3)
	a.MustPushPull()
	changed := func() bool {
		return watch.Next(t).GetEvent().GetDocEvent().GetEvent().GetType() == api.DocEventType_DOC_EVENT_TYPE_DOCUMENT_CHANGED
	}
	for !changed() { // b hears of a's changes through the owner
	}
	b.MustPushPull()
	for seq := uint32(1); seq <= a.LastSeq; seq++ {
		assert.Contains(t, b.Pulled, fmt.Sprintf("%s/%d", a.ID, seq), "b pulled a's change %d", seq)
	}
	watch.Close()
	owner, err := c.OwnerOf(wire.Context(t), key)
	require.NoError(t, err)
	assert.Equal(t, c.Node(1).Addr(), owner.Node.Addr(), "node 1 served the document throughout")

	// Deactivating through node 0 detaches a at the owner (ClusterService).
	_, err = a.C.DeactivateClient(wire.Context(t), connect.NewRequest(&api.DeactivateClientRequest{ClientId: a.ID}))
	require.NoError(t, err)
}

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestClusterWrongCA: a node that verifies the others with another CA
// cannot relay to them; the client's call fails retryably, and the node
// logs why at error level, naming the flags to check.
func TestClusterWrongCA(t *testing.T) {
	ca, other := certtest.NewCA(t, "cluster CA"), certtest.NewCA(t, "another CA")
	dir := t.TempDir()
	right, wrong := ca.WriteCA(t, dir, "ca"), other.WriteCA(t, dir, "other")
	var logs syncBuffer
	c := clustertest.Start(t, 2, tlsNodes(t, ca, func(i int) string {
		if i == 0 {
			return wrong
		}
		return right
	}), clustertest.WithConfig(func(i int, cfg *server.Config) {
		if i == 0 {
			cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		}
	}))
	key := keyOwnedBy(t, c, c.Node(1))
	r := wire.NewReplica(t, servertest.TLSClient(t, c.Node(0).Server(), servertest.ConnectJSON, ca.Pool()))
	_, err := r.Attach(context.Background(), key)
	require.Error(t, err)
	assert.Equal(t, connect.CodeUnavailable, connect.CodeOf(err))
	assert.Contains(t, logs.String(), "certificate does not verify")
	assert.Contains(t, logs.String(), "certificate signed by unknown authority")
}
