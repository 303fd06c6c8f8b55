package clustertest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/wrapperspb"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/clustertest"
	"github.com/yorkie-affinity/yorkie/server/routing"
	"github.com/yorkie-affinity/yorkie/server/servertest"
	"github.com/yorkie-affinity/yorkie/server/servertest/poll"
	"github.com/yorkie-affinity/yorkie/server/servertest/testclock"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
)

// projectCacheTTL is the nodes' cache of the default project's settings in
// these tests; the shared clock moves past it instead of the test waiting.
const projectCacheTTL = time.Minute

// updateDefaultProject sets fields of the default project through node n's
// AdminService, logged in as the default admin.
func updateDefaultProject(t *testing.T, n *clustertest.Node, fields *api.UpdatableProjectFields) *api.Project {
	t.Helper()
	admin := v1connect.NewAdminServiceClient(servertest.HTTPClient(t, servertest.ConnectJSON), n.URL())
	ctx := wire.Context(t)
	login, err := admin.LogIn(ctx, connect.NewRequest(&api.LogInRequest{Username: "admin", Password: "admin"}))
	wire.Must(t, err, "log in")
	req := connect.NewRequest(&api.UpdateProjectRequest{Id: database.DefaultProjectID, Fields: fields})
	req.Header().Set("Authorization", "Bearer "+login.Msg.Token)
	res, err := admin.UpdateProject(ctx, req)
	wire.Must(t, err, "update the default project")
	return res.Msg.Project
}

// wantLimitError fails t unless err is resource_exhausted with the
// ErrorInfo code name.
func wantLimitError(t *testing.T, err error, name, what string) {
	t.Helper()
	if connect.CodeOf(err) != connect.CodeResourceExhausted || wire.ErrorInfo(err)["code"] != name {
		t.Fatalf("%s: %v (ErrorInfo %v), want resource_exhausted %s", what, err, wire.ErrorInfo(err), name)
	}
}

// TestProjectLimitsAreCountedAtTheOwner: clients of one document reach it
// through both nodes of a cluster, and the project's attachments and
// subscribers per document hold over all of them, because the owner counts.
// The limits are set through the node that does not own the document and
// reach the owner once its cached copy of the project expires.
func TestProjectLimitsAreCountedAtTheOwner(t *testing.T) {
	for _, mode := range []routing.Mode{routing.Forward, routing.Redirect} {
		t.Run(string(mode), func(t *testing.T) {
			clock := &testclock.Clock{}
			c := clustertest.Start(t, 2, clustertest.WithMode(mode), clustertest.WithConfig(func(_ int, cfg *server.Config) {
				cfg.ProjectCacheTTL = projectCacheTTL
			}), clustertest.WithSeams(func(int) []server.Option { return []server.Option{server.WithClock(clock.Now)} }))
			docKey := wire.UniqueKey(t, "limited")
			first := wire.NewReplica(t, c.Node(0).ConnectJSON())
			resp, err := first.Attach(wire.Context(t), docKey)
			wire.Must(t, err, "first attach")
			if resp.GetMaxSizePerDocument() <= 0 {
				t.Fatalf("first attach announces max_size_per_document %d", resp.GetMaxSizePerDocument())
			}
			owner := ownerOf(t, c, docKey).Node
			other := c.Node(1 - owner.Index())

			updateDefaultProject(t, other, &api.UpdatableProjectFields{
				MaxAttachmentsPerDocument: wrapperspb.Int32(2),
				MaxSubscribersPerDocument: wrapperspb.Int32(1),
				MaxSizePerDocument:        wrapperspb.Int32(4096),
			})
			clock.Advance(projectCacheTTL + time.Second)

			// The second client, through the node that does not own the
			// document, gets the project's size bound from the owner.
			second := wire.NewReplica(t, other.ConnectJSON())
			resp, err = second.Attach(wire.Context(t), docKey)
			wire.Must(t, err, "second attach")
			if got := resp.GetMaxSizePerDocument(); got != 4096 {
				t.Fatalf("second attach announces max_size_per_document %d, want the project's 4096", got)
			}
			// A third is refused through either node.
			for _, n := range []*clustertest.Node{other, owner} {
				third := wire.NewReplica(t, n.ConnectJSON())
				_, err := third.Attach(wire.Context(t), docKey)
				wantLimitError(t, err, "ErrTooManyAttachments", fmt.Sprintf("third attach through node %d", n.Index()))
			}

			if mode == routing.Redirect {
				// Watch and detach are served by the owner only; the
				// forward run covers the counting of watchers.
				return
			}
			// One watcher: the first client's stream, through the owner;
			// the second client's, through the other node, is refused.
			stream := first.Watch(t)
			if stream.Next(t).GetInitialization() == nil {
				t.Fatal("the first Watch message is not an initialization")
			}
			refused := second.Watch(t)
			wantLimitError(t, refused.End(t), "ErrTooManySubscribers", "second Watch")
			// Once the first stops watching, the second gets through, as
			// the SDK's retry every second would.
			stream.Close()
			poll.Until(t, wire.WaitTimeout, "the second client's Watch", func() error {
				s := second.Watch(t)
				defer s.Close()
				m, err := s.NextWithin(wire.WaitTimeout)
				if err != nil {
					return err
				}
				if m.GetInitialization() == nil {
					return errors.New("the first Watch message is not an initialization")
				}
				return nil
			})

			// A detach makes room for another attach, through either node.
			_, err = first.Detach(wire.Context(t))
			wire.Must(t, err, "detach")
			third := wire.NewReplica(t, other.ConnectJSON())
			_, err = third.Attach(context.Background(), docKey)
			wire.Must(t, err, "attach after a detach")
		})
	}
}
