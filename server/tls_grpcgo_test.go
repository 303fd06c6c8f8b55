package server_test

import (
	"crypto/tls"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/servertest"
	"github.com/yorkie-affinity/yorkie/server/servertest/sdksim"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
)

// TestGRPCGoOverTLS: a grpc-go client (HTTP/2 by ALPN, grpc-go's own
// transport, not connect's) activates, attaches, pushes and watches over
// TLS, and a Connect client pulls what it pushed.
func TestGRPCGoOverTLS(t *testing.T) {
	srv, pool, _, _ := startTLS(t)
	conn, err := grpc.NewClient(srv.RPCAddr(), grpc.WithTransportCredentials(
		credentials.NewTLS(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	ctx := wire.Context(t)
	const service = "/yorkie.v1.YorkieService/"
	key := wire.UniqueKey(t, "grpc-go")

	activated := &api.ActivateClientResponse{}
	require.NoError(t, conn.Invoke(ctx, service+"ActivateClient", &api.ActivateClientRequest{ClientKey: "grpc-go"}, activated))
	c, err := sdksim.New(activated.GetClientId())
	require.NoError(t, err)
	c.Attached(key)
	c.NewPresence(map[string]string{"name": `"grpc-go"`})
	attached := &api.AttachDocumentResponse{}
	require.NoError(t, conn.Invoke(ctx, service+"AttachDocument", &api.AttachDocumentRequest{ClientId: c.ID, ChangePack: c.Pack()}, attached))
	_, err = c.Absorb(attached.GetChangePack())
	require.NoError(t, err)

	stream, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, service+"Watch")
	require.NoError(t, err)
	require.NoError(t, stream.SendMsg(&api.WatchRequest{ClientId: c.ID, Resources: []*api.ResourceDescriptor{{
		Resource: &api.ResourceDescriptor_Document{Document: &api.DocumentDescriptor{DocumentId: attached.GetDocumentId()}},
	}}}))
	require.NoError(t, stream.CloseSend())
	first := &api.WatchResponse{}
	require.NoError(t, stream.RecvMsg(first))
	assert.NotNil(t, first.GetInitialization(), "the Watch stream opens with its initialization")

	for i := range 3 {
		c.NewSet(fmt.Sprintf("k%d", i))
	}
	pushed := &api.PushPullChangesResponse{}
	require.NoError(t, conn.Invoke(ctx, service+"PushPullChanges", &api.PushPullChangesRequest{ClientId: c.ID, DocumentId: attached.GetDocumentId(), ChangePack: c.Pack()}, pushed))
	_, err = c.Absorb(pushed.GetChangePack())
	require.NoError(t, err)
	assert.Equal(t, c.LastSeq, c.Acked, "the server acknowledged every change")

	b := wire.NewReplica(t, servertest.TLSClient(t, srv, servertest.ConnectJSON, pool))
	b.MustAttach(key)
	for seq := uint32(1); seq <= c.LastSeq; seq++ {
		assert.Contains(t, b.Pulled, fmt.Sprintf("%s/%d", c.ID, seq), "the Connect client pulled change %d", seq)
	}
	event := &api.WatchResponse{}
	require.NoError(t, stream.RecvMsg(event), "the grpc-go Watch hears the Connect client")
	assert.NotNil(t, event.GetEvent().GetDocEvent())
}
