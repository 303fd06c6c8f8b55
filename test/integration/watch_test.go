package integration_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/rpc/errinfo"
	"github.com/yorkie-affinity/yorkie/server/servertest"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
)

const (
	changed   = api.DocEventType_DOC_EVENT_TYPE_DOCUMENT_CHANGED
	watched   = api.DocEventType_DOC_EVENT_TYPE_DOCUMENT_WATCHED
	unwatched = api.DocEventType_DOC_EVENT_TYPE_DOCUMENT_UNWATCHED
)

func TestWatch(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, c v1connect.YorkieServiceClient, _ *server.Server) {
		a, b, _ := attachedPair(t, c)

		aw := a.Watch(t)
		init := aw.Next(t).GetInitialization()
		if init == nil || len(init.GetResourceInits()) != 1 {
			t.Fatalf("first message is not an initialization for one resource")
		}
		di := init.GetResourceInits()[0].GetDocumentInit()
		if di.GetDocumentId() != a.DocID || !slices.Equal(di.GetClientIds(), []string{a.ID}) {
			t.Fatalf("initialization %v, want document %s watched by [%s]", di, a.DocID, a.ID)
		}

		bw := b.Watch(t)
		bi := bw.Next(t).GetInitialization().GetResourceInits()[0].GetDocumentInit()
		got := slices.Sorted(slices.Values(bi.GetClientIds()))
		if want := slices.Sorted(slices.Values([]string{a.ID, b.ID})); !slices.Equal(got, want) {
			t.Fatalf("b's initialization lists %v, want %v", got, want)
		}
		wantEvent(t, docEvent(t, a.DocID, aw.Next(t)), watched, b.ID)

		b.Edit(1)
		b.MustPushPull()
		wantEvent(t, docEvent(t, a.DocID, aw.Next(t)), changed, b.ID)

		bw.Close()
		wantEvent(t, docEvent(t, a.DocID, aw.Next(t)), unwatched, b.ID)
	})
}

func TestWatchDocument(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, c v1connect.YorkieServiceClient, _ *server.Server) {
		a, b, _ := attachedPair(t, c)

		aw := a.WatchDocument(t)
		init := aw.Next(t).GetInitialization()
		if init == nil || !slices.Equal(init.GetClientIds(), []string{a.ID}) {
			t.Fatalf("first message %v, want an initialization listing [%s]", init, a.ID)
		}
		bw := b.WatchDocument(t)
		if bw.Next(t).GetInitialization() == nil {
			t.Fatalf("b's first message is not an initialization")
		}
		wantEvent(t, aw.Next(t).GetEvent(), watched, b.ID)
		b.Edit(1)
		b.MustPushPull()
		wantEvent(t, aw.Next(t).GetEvent(), changed, b.ID)
		bw.Close()
		wantEvent(t, aw.Next(t).GetEvent(), unwatched, b.ID)
	})
}

func TestWatchErrors(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, c v1connect.YorkieServiceClient, _ *server.Server) {
		a := attachedReplica(t, c)
		doc := &api.ResourceDescriptor{Resource: &api.ResourceDescriptor_Document{
			Document: &api.DocumentDescriptor{DocumentId: a.DocID},
		}}
		channel := &api.ResourceDescriptor{Resource: &api.ResourceDescriptor_Channel{
			Channel: &api.ChannelDescriptor{ChannelKey: "room"},
		}}
		badChannel := &api.ResourceDescriptor{Resource: &api.ResourceDescriptor_Channel{
			Channel: &api.ChannelDescriptor{ChannelKey: "room..1"},
		}}
		stranger := newReplica(t, c)
		cases := []struct {
			name string
			req  *api.WatchRequest
			code connect.Code
			want string
		}{
			{"no resource", &api.WatchRequest{ClientId: a.ID}, connect.CodeInvalidArgument, errinfo.CodeInvalidArgument},
			{"too many resources", &api.WatchRequest{ClientId: a.ID, Resources: slices.Repeat([]*api.ResourceDescriptor{doc}, 65)}, connect.CodeInvalidArgument, errinfo.CodeInvalidArgument},
			{"invalid channel key", &api.WatchRequest{ClientId: a.ID, Resources: []*api.ResourceDescriptor{badChannel}}, connect.CodeInvalidArgument, errinfo.CodeInvalidChannelKey},
			{"channel of an unknown client", &api.WatchRequest{ClientId: unknownClientID, Resources: []*api.ResourceDescriptor{channel}}, connect.CodeNotFound, errinfo.CodeClientNotFound},
			{"channel and a document not attached", &api.WatchRequest{ClientId: stranger.ID, Resources: []*api.ResourceDescriptor{channel, doc}}, connect.CodeFailedPrecondition, errinfo.CodeDocumentNotAttached},
			{"malformed client", &api.WatchRequest{ClientId: "ZZ", Resources: []*api.ResourceDescriptor{doc}}, connect.CodeInvalidArgument, errinfo.CodeInvalidArgument},
			{"unknown client", &api.WatchRequest{ClientId: unknownClientID, Resources: []*api.ResourceDescriptor{doc}}, connect.CodeNotFound, errinfo.CodeClientNotFound},
			{"not attached", &api.WatchRequest{ClientId: stranger.ID, Resources: []*api.ResourceDescriptor{doc}}, connect.CodeFailedPrecondition, errinfo.CodeDocumentNotAttached},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				w := wire.OpenStream(t, func(ctx context.Context) (*connect.ServerStreamForClient[api.WatchResponse], error) {
					return c.Watch(ctx, connect.NewRequest(tc.req))
				})
				if m, err := w.NextWithin(0); err == nil {
					t.Fatalf("got message %v, want the stream to fail", m)
				}
				wantError(t, w.End(t), tc.code, tc.want)
			})
		}
	})
}

func TestShutdownEndsWatchWithUnavailable(t *testing.T) {
	for _, p := range servertest.Protocols() {
		t.Run(p.String(), func(t *testing.T) {
			srv := servertest.Start(t)
			c := servertest.Client(t, srv, p)
			a := attachedReplica(t, c)
			aw := a.Watch(t)
			if aw.Next(t).GetInitialization() == nil {
				t.Fatalf("first message is not an initialization")
			}
			ctx, cancel := context.WithTimeout(context.Background(), wire.WaitTimeout)
			defer cancel()
			wire.Must(t, srv.Shutdown(ctx), "shutdown")
			wantError(t, aw.End(t), connect.CodeUnavailable, errinfo.CodeShuttingDown)

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
		wire.Must(t, err, "GET "+url)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		wire.Must(t, err, "read "+url)
		return resp.StatusCode, string(body)
	}
	if code, body := get(servertest.BaseURL(srv) + "/healthz"); code != http.StatusOK || body != "ok" {
		t.Fatalf("GET /healthz: %d %q, want 200 ok", code, body)
	}
	for _, p := range []servertest.Protocol{servertest.ConnectJSON, servertest.GRPC} {
		health := grpchealth.NewClient(servertest.HTTPClient(t, p), servertest.BaseURL(srv), p.ClientOptions()...)
		resp, err := health.Check(wire.Context(t), &grpchealth.CheckRequest{Service: v1connect.YorkieServiceName})
		wire.Must(t, err, "health check over "+p.String())
		if resp.Status != grpchealth.StatusServing {
			t.Fatalf("health over %s: %v, want serving", p, resp.Status)
		}
	}

	// A few calls so that the RPC metrics have samples.
	c := servertest.Client(t, srv, servertest.ConnectJSON)
	r := attachedReplica(t, c)
	r.MustPushPull()
	r.MustPushPull()
	_, err := c.DeactivateClient(wire.Context(t), connect.NewRequest(&api.DeactivateClientRequest{ClientId: "zz"}))
	wantError(t, err, connect.CodeInvalidArgument, errinfo.CodeInvalidArgument)
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
	// pprof is off unless asked for: its command line shows the secrets.
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/cmdline"} {
		if code, _ := get(profiling + path); code != http.StatusNotFound {
			t.Fatalf("GET %s by default: %d, want 404", path, code)
		}
	}
	withPprof := servertest.Start(t, func(cfg *server.Config) {
		cfg.PprofEnabled = true
		cfg.ProfilingHost = "127.0.0.2" // another loopback address than the RPC port's
	})
	if host, _, _ := net.SplitHostPort(withPprof.ProfilingAddr()); host != "127.0.0.2" {
		t.Fatalf("profiling port bound to %s, want 127.0.0.2", withPprof.ProfilingAddr())
	}
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/cmdline", "/metrics"} {
		if code, _ := get("http://" + withPprof.ProfilingAddr() + path); code != http.StatusOK {
			t.Fatalf("GET %s with pprof enabled: %d, want 200", path, code)
		}
	}
}
