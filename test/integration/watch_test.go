package integration_test

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/rpc"
	"github.com/yorkie-affinity/yorkie/server/servertest"
)

const (
	changed   = api.DocEventType_DOC_EVENT_TYPE_DOCUMENT_CHANGED
	watched   = api.DocEventType_DOC_EVENT_TYPE_DOCUMENT_WATCHED
	unwatched = api.DocEventType_DOC_EVENT_TYPE_DOCUMENT_UNWATCHED
)

func TestWatch(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, c v1connect.YorkieServiceClient, _ *server.Server) {
		docKey := uniqueKey(t, "doc")
		a := newReplica(t, c)
		b := newReplica(t, c)
		a.mustAttach(docKey)
		b.mustAttach(docKey)

		aw := a.watch(t)
		init := aw.next(t).GetInitialization()
		if init == nil || len(init.GetResourceInits()) != 1 {
			t.Fatalf("first message is not an initialization for one resource")
		}
		di := init.GetResourceInits()[0].GetDocumentInit()
		if di.GetDocumentId() != a.docID || !slices.Equal(di.GetClientIds(), []string{a.id}) {
			t.Fatalf("initialization %v, want document %s watched by [%s]", di, a.docID, a.id)
		}

		bw := b.watch(t)
		bi := bw.next(t).GetInitialization().GetResourceInits()[0].GetDocumentInit()
		got := slices.Sorted(slices.Values(bi.GetClientIds()))
		if want := slices.Sorted(slices.Values([]string{a.id, b.id})); !slices.Equal(got, want) {
			t.Fatalf("b's initialization lists %v, want %v", got, want)
		}
		wantEvent(t, docEvent(t, a.docID, aw.next(t)), watched, b.id)

		b.edit(1)
		b.mustPushPull()
		wantEvent(t, docEvent(t, a.docID, aw.next(t)), changed, b.id)

		bw.close()
		wantEvent(t, docEvent(t, a.docID, aw.next(t)), unwatched, b.id)
	})
}

func TestWatchDocument(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, c v1connect.YorkieServiceClient, _ *server.Server) {
		docKey := uniqueKey(t, "doc")
		a := newReplica(t, c)
		b := newReplica(t, c)
		a.mustAttach(docKey)
		b.mustAttach(docKey)

		aw := a.watchDocument(t)
		init := aw.next(t).GetInitialization()
		if init == nil || !slices.Equal(init.GetClientIds(), []string{a.id}) {
			t.Fatalf("first message %v, want an initialization listing [%s]", init, a.id)
		}
		bw := b.watchDocument(t)
		if bw.next(t).GetInitialization() == nil {
			t.Fatalf("b's first message is not an initialization")
		}
		wantEvent(t, aw.next(t).GetEvent(), watched, b.id)
		b.edit(1)
		b.mustPushPull()
		wantEvent(t, aw.next(t).GetEvent(), changed, b.id)
		bw.close()
		wantEvent(t, aw.next(t).GetEvent(), unwatched, b.id)
	})
}

func TestWatchErrors(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, c v1connect.YorkieServiceClient, _ *server.Server) {
		a := newReplica(t, c)
		a.mustAttach(uniqueKey(t, "doc"))
		doc := &api.ResourceDescriptor{Resource: &api.ResourceDescriptor_Document{
			Document: &api.DocumentDescriptor{DocumentId: a.docID},
		}}
		channel := &api.ResourceDescriptor{Resource: &api.ResourceDescriptor_Channel{
			Channel: &api.ChannelDescriptor{ChannelKey: "room"},
		}}
		stranger := newReplica(t, c)
		cases := []struct {
			name string
			req  *api.WatchRequest
			code connect.Code
			want string
		}{
			{"no resource", &api.WatchRequest{ClientId: a.id}, connect.CodeInvalidArgument, rpc.CodeInvalidArgument},
			{"two resources", &api.WatchRequest{ClientId: a.id, Resources: []*api.ResourceDescriptor{doc, doc}}, connect.CodeInvalidArgument, rpc.CodeInvalidArgument},
			{"channel", &api.WatchRequest{ClientId: a.id, Resources: []*api.ResourceDescriptor{channel}}, connect.CodeUnimplemented, rpc.CodeUnimplemented},
			{"malformed client", &api.WatchRequest{ClientId: "ZZ", Resources: []*api.ResourceDescriptor{doc}}, connect.CodeInvalidArgument, rpc.CodeInvalidArgument},
			{"unknown client", &api.WatchRequest{ClientId: unknownClientID, Resources: []*api.ResourceDescriptor{doc}}, connect.CodeNotFound, rpc.CodeClientNotFound},
			{"not attached", &api.WatchRequest{ClientId: stranger.id, Resources: []*api.ResourceDescriptor{doc}}, connect.CodeFailedPrecondition, rpc.CodeDocumentNotAttached},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				w := startWatch(t, func(ctx context.Context) (*connect.ServerStreamForClient[api.WatchResponse], error) {
					return c.Watch(ctx, connect.NewRequest(tc.req))
				})
				select {
				case m := <-w.msgs:
					t.Fatalf("got message %v, want the stream to fail", m)
				default:
				}
				wantError(t, w.end(t), tc.code, tc.want)
			})
		}
	})
}

func TestShutdownEndsWatchWithUnavailable(t *testing.T) {
	for _, p := range servertest.Protocols() {
		t.Run(p.String(), func(t *testing.T) {
			srv := servertest.Start(t)
			c := servertest.Client(t, srv, p)
			a := newReplica(t, c)
			a.mustAttach(uniqueKey(t, "doc"))
			aw := a.watch(t)
			if aw.next(t).GetInitialization() == nil {
				t.Fatalf("first message is not an initialization")
			}
			ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
			defer cancel()
			must(t, srv.Shutdown(ctx), "shutdown")
			wantError(t, aw.end(t), connect.CodeUnavailable, rpc.CodeShuttingDown)

			// A fresh client, so the call dials: a pooled connection the server
			// closed would fail on the client's side before reaching anyone.
			late := servertest.Client(t, srv, p)
			_, err := late.ActivateClient(ctx, connect.NewRequest(&api.ActivateClientRequest{ClientKey: "late"}))
			if connect.CodeOf(err) != connect.CodeUnavailable {
				t.Fatalf("call after shutdown: %v, want unavailable", err)
			}
		})
	}
}

func TestHealthAndProfiling(t *testing.T) {
	srv := servertest.Start(t)
	hc := servertest.HTTPClient(t, servertest.ConnectJSON)

	get := func(url string) (int, string) {
		t.Helper()
		resp, err := hc.Get(url)
		must(t, err, "GET "+url)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		must(t, err, "read "+url)
		return resp.StatusCode, string(body)
	}
	if code, body := get(servertest.BaseURL(srv) + "/healthz"); code != http.StatusOK || body != "ok" {
		t.Fatalf("GET /healthz: %d %q, want 200 ok", code, body)
	}
	for _, p := range []servertest.Protocol{servertest.ConnectJSON, servertest.GRPC} {
		health := grpchealth.NewClient(servertest.HTTPClient(t, p), servertest.BaseURL(srv), p.ClientOptions()...)
		resp, err := health.Check(testCtx(t), &grpchealth.CheckRequest{Service: v1connect.YorkieServiceName})
		must(t, err, "health check over "+p.String())
		if resp.Status != grpchealth.StatusServing {
			t.Fatalf("health over %s: %v, want serving", p, resp.Status)
		}
	}

	// A few calls so that the RPC metrics have samples.
	c := servertest.Client(t, srv, servertest.ConnectJSON)
	r := newReplica(t, c)
	r.mustAttach(uniqueKey(t, "doc"))
	r.mustPushPull()
	r.mustPushPull()
	_, err := c.DeactivateClient(testCtx(t), connect.NewRequest(&api.DeactivateClientRequest{ClientId: "zz"}))
	wantError(t, err, connect.CodeInvalidArgument, rpc.CodeInvalidArgument)
	profiling := "http://" + srv.ProfilingAddr()
	code, body := get(profiling + "/metrics")
	for _, want := range []string{
		`yorkie_rpc_handled_total{code="ok",procedure="/yorkie.v1.YorkieService/ActivateClient"} 1`,
		`yorkie_rpc_handled_total{code="ok",procedure="/yorkie.v1.YorkieService/AttachDocument"} 1`,
		`yorkie_rpc_handled_total{code="ok",procedure="/yorkie.v1.YorkieService/PushPullChanges"} 2`,
		`yorkie_rpc_handled_total{code="invalid_argument",procedure="/yorkie.v1.YorkieService/DeactivateClient"} 1`,
		`yorkie_rpc_duration_seconds_count{code="ok",procedure="/yorkie.v1.YorkieService/PushPullChanges"} 2`,
	} {
		if code != http.StatusOK || !strings.Contains(body, want) {
			t.Fatalf("GET /metrics: %d, want %s in:\n%s", code, want, body)
		}
	}
	if code, _ := get(profiling + "/debug/pprof/"); code != http.StatusOK {
		t.Fatalf("GET /debug/pprof/: %d", code)
	}
}
