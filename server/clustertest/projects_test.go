package clustertest_test

import (
	"context"
	"testing"

	"connectrpc.com/connect"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/clustertest"
	"github.com/yorkie-affinity/yorkie/server/project"
	"github.com/yorkie-affinity/yorkie/server/servertest"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
)

// withAPIKey sends key in x-api-key on every unary call and stream.
func withAPIKey(key string) connect.ClientOption {
	return connect.WithInterceptors(apiKey(key))
}

type apiKey string

func (k apiKey) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		req.Header().Set("x-api-key", string(k))
		return next(ctx, req)
	}
}

func (k apiKey) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		conn := next(ctx, spec)
		conn.RequestHeader().Set("x-api-key", string(k))
		return conn
	}
}

func (k apiKey) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

// A project's document is bound under its project-scoped key and served by
// its owner to clients of every node: relayed calls carry the API key, and a
// deactivation on a node that does not own the document detaches the client
// at the owner, in the client's project. The default project's document of
// the same key is another one.
func TestProjectDocumentAcrossNodes(t *testing.T) {
	c := clustertest.Start(t, 3)
	ctx := wire.Context(t)
	p, err := c.DB().CreateProject(ctx, "owner", "app")
	wire.Must(t, err, "create project")
	const key = "shared"

	first := wire.NewReplica(t, c.Node(0).Client(servertest.ConnectJSON, withAPIKey(p.PublicKey)))
	first.MustAttach(key)
	owner := c.WaitOwner(project.ScopedKey(p.ID, key), nil)
	var other int
	for i := range 3 {
		if c.Node(i) != owner.Node {
			other = i
			break
		}
	}
	// A client on a node that does not own the document: its calls are
	// relayed to the owner, which must resolve the same project.
	second := wire.NewReplica(t, c.Node(other).Client(servertest.ConnectJSON, withAPIKey(p.PublicKey)))
	second.MustAttach(key)
	if second.DocID != first.DocID {
		t.Fatalf("clients of one project on two nodes got documents %s and %s", first.DocID, second.DocID)
	}
	w, _ := watchReady(t, first)
	first.MustPushPull()
	second.Edit(2)
	second.MustPushPull()
	awaitEvent(t, w, changed, second.ID)
	first.MustPushPull()
	if err := hasPulled(first, second); err != nil {
		t.Fatal(err)
	}

	plain := wire.NewReplica(t, c.Node(other).Client(servertest.ConnectJSON))
	plain.MustAttach(key)
	if plain.DocID == first.DocID {
		t.Fatalf("the default project's client attached project %s's document %s", p.ID, first.DocID)
	}
	c.WaitOwner(key, nil)

	// Deactivating on a node that does not own the document: the owner
	// detaches the client, storing its presence clear, which the other
	// client pulls.
	_, err = c.Node(other).Client(servertest.ConnectJSON, withAPIKey(p.PublicKey)).DeactivateClient(ctx,
		connect.NewRequest(&api.DeactivateClientRequest{ClientId: second.ID, Synchronous: true}))
	wire.Must(t, err, "deactivate")
	before := len(first.Seen)
	first.MustPushPull()
	if len(first.Seen) != before+1 {
		t.Fatalf("after the deactivation on node %d, the owner's client pulled %d changes, want the presence clear", other, len(first.Seen)-before)
	}
}
