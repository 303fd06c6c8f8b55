package http1_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/routing"
	"github.com/yorkie-affinity/yorkie/server/rpc/http1"
	"github.com/yorkie-affinity/yorkie/server/servertest"
)

const (
	activatePath = "/yorkie.v1.YorkieService/ActivateClient"
	pushPullPath = "/yorkie.v1.YorkieService/PushPullChanges"
)

// fastPaths turns the RPC port's fast paths on whatever the environment
// says (servertest.StockRPCEnv): these tests are about them.
func fastPaths(cfg *server.Config) { cfg.DisableFastHTTP1, cfg.DisableFastJSON = false, false }

// preflight is a CORS preflight, which the fast loop hands to net/http.
var preflight = servertest.RawPreflight(activatePath)

// TestHTTP1AnswersLikeNetHTTP sends the same requests on a connection the
// fast loop serves and on one net/http serves (after a preflight handed it
// over), and expects the same answers.
func TestHTTP1AnswersLikeNetHTTP(t *testing.T) {
	srv := servertest.Start(t, fastPaths)
	requests := []string{
		servertest.RawPost(activatePath, "application/json", `{"clientKey":"same-key"}`),
		servertest.RawPost(activatePath, "application/json", `{"clientKey":"same-key"}`, "origin: https://app.example"),
		servertest.RawPost(activatePath, "application/json", `{"clientKey":`),
		servertest.RawPost(activatePath, "application/json", `{}`),
		servertest.RawPost(activatePath, "application/proto", "\x0a\x08same-key"),
		servertest.RawPost(activatePath, "application/proto", "\xff\xff"),
		servertest.RawPost(activatePath, "application/json; charset=utf-8", `{"clientKey":"same-key"}`),
		servertest.RawPost(activatePath, "application/json", `{"clientKey":"same-key"}`, "connect-timeout-ms: 5000"),
		servertest.RawPost("/yorkie.v1.YorkieService/DeactivateClient", "application/json", `{"clientId":"000000000000000000000000"}`),
		servertest.RawPost("/yorkie.v1.YorkieService/PushPullChanges", "application/json", `{"clientId":"x"}`),
	}
	fast, slow := servertest.DialRaw(t, srv), servertest.DialRaw(t, srv)
	slow.Send(preflight)
	slow.Answer()
	for _, req := range requests {
		before := fastServed(t, srv)
		fast.Send(req)
		fs, fh, fb := fast.Answer()
		if fastServed(t, srv) != before+1 {
			t.Errorf("request %q was not answered by the fast loop", req)
		}
		before = fastServed(t, srv)
		slow.Send(req)
		ss, sh, sb := slow.Answer()
		if fastServed(t, srv) != before {
			t.Errorf("request %q on the handed-off connection was answered by the fast loop", req)
		}
		// Every activation makes a new client: IDs differ, shapes must not.
		if fs != ss || clientIDs.ReplaceAllString(fb, "ID") != clientIDs.ReplaceAllString(sb, "ID") || !sameHeader(fh, sh) {
			t.Errorf("request %q:\nfast loop: %d %v %q\nnet/http:  %d %v %q", req, fs, fh, fb, ss, sh, sb)
		}
	}
}

// fastServed reads how many requests the fast loop has answered.
func fastServed(t *testing.T, srv *server.Server) float64 {
	t.Helper()
	n, ok := fastCounter(t, srv)
	if !ok {
		t.Fatalf("no %s metric", http1.MetricFastRequests)
	}
	return n
}

// fastCounter reads the fast loop's counter, and whether srv exports it.
func fastCounter(t *testing.T, srv *server.Server) (float64, bool) {
	t.Helper()
	families, err := srv.Registry().Gather()
	if err != nil {
		t.Fatalf("gather metrics: %v", err)
	}
	for _, f := range families {
		if f.GetName() == http1.MetricFastRequests {
			return f.GetMetric()[0].GetCounter().GetValue(), true
		}
	}
	return 0, false
}

var clientIDs = regexp.MustCompile(`[0-9a-f]{24}`)

func sameHeader(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

// TestHTTP1Framing covers how requests arrive: pipelined, in pieces, handed
// over mid-connection, closing, and in spellings the fast loop leaves to
// net/http.
func TestHTTP1Framing(t *testing.T) {
	srv := servertest.Start(t, fastPaths)
	activate := servertest.RawPost(activatePath, "application/json", `{"clientKey":"framing"}`)
	ok := func(c *servertest.RawConn, what string) {
		t.Helper()
		if status, _, body := c.Answer(); status != http.StatusOK || !strings.Contains(body, "clientId") {
			t.Fatalf("%s: %d %s", what, status, body)
		}
	}

	t.Run("pipelined", func(t *testing.T) {
		c := servertest.DialRaw(t, srv)
		c.Send(activate + activate + activate)
		for i := range 3 {
			ok(c, fmt.Sprint("pipelined ", i))
		}
	})
	t.Run("in pieces", func(t *testing.T) {
		c := servertest.DialRaw(t, srv)
		for i := 0; i < len(activate); i += 7 {
			c.Send(activate[i:min(i+7, len(activate))])
			time.Sleep(time.Millisecond)
		}
		ok(c, "request in pieces")
		c.Send(activate)
		ok(c, "next request")
	})
	t.Run("handed over mid-connection", func(t *testing.T) {
		c := servertest.DialRaw(t, srv)
		c.Send(activate)
		ok(c, "fast")
		c.Send(preflight)
		if status, _, _ := c.Answer(); status != http.StatusNoContent {
			t.Fatalf("preflight: %d", status)
		}
		c.Send(activate)
		ok(c, "after hand-over")
	})
	t.Run("connection close", func(t *testing.T) {
		c := servertest.DialRaw(t, srv)
		c.Send(strings.Replace(activate, "connection: keep-alive", "connection: close", 1))
		ok(c, "closing request")
		if _, err := c.R.ReadByte(); err != io.EOF {
			t.Fatalf("connection stayed open: %v", err)
		}
	})
	t.Run("http/1.0", func(t *testing.T) {
		c := servertest.DialRaw(t, srv)
		c.Send(strings.Replace(activate, "HTTP/1.1", "HTTP/1.0", 1))
		ok(c, "HTTP/1.0 request")
	})
	t.Run("bare line feeds", func(t *testing.T) {
		c := servertest.DialRaw(t, srv)
		c.Send(strings.ReplaceAll(activate, "\r\n", "\n"))
		ok(c, "bare LF request")
	})
	t.Run("chunked body", func(t *testing.T) {
		c := servertest.DialRaw(t, srv)
		body := `{"clientKey":"framing"}`
		head, _, _ := strings.Cut(activate, "content-length")
		c.Send(head + fmt.Sprintf("transfer-encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", len(body), body))
		ok(c, "chunked request")
	})
	t.Run("body larger than the fast buffer", func(t *testing.T) {
		c := servertest.DialRaw(t, srv)
		c.Send(servertest.RawPost(activatePath, "application/json", `{"clientKey":"framing","metadata":{"k":"`+strings.Repeat("x", 40<<10)+`"}}`))
		ok(c, "large request")
	})
	t.Run("unknown path", func(t *testing.T) {
		c := servertest.DialRaw(t, srv)
		c.Send(servertest.RawPost("/nowhere", "application/json", `{}`))
		if status, _, _ := c.Answer(); status != http.StatusNotFound {
			t.Fatalf("unknown path: %d", status)
		}
	})
	t.Run("malformed header", func(t *testing.T) {
		c := servertest.DialRaw(t, srv)
		c.Send(servertest.RawPost(activatePath, "application/json", `{}`, "bad header"))
		if status, _, _ := c.Answer(); status != http.StatusBadRequest {
			t.Fatalf("malformed header: %d", status)
		}
	})
	t.Run("oversized", func(t *testing.T) {
		small := servertest.Start(t, fastPaths, func(cfg *server.Config) { cfg.MaxRequestBytes = 100 })
		c := servertest.DialRaw(t, small)
		c.Send(servertest.RawPost(activatePath, "application/json", `{"clientKey":"`+strings.Repeat("x", 200)+`"}`))
		if status, _, body := c.Answer(); status == http.StatusOK || !strings.Contains(body, "invalid_argument") || !strings.Contains(body, "ErrRequestTooLarge") {
			t.Fatalf("oversized request: %d %s", status, body)
		}
	})
}

// TestHTTP1ShutdownClosesIdleConnections: an idle keep-alive connection
// does not hold up shutdown, and sees its connection close.
func TestHTTP1ShutdownClosesIdleConnections(t *testing.T) {
	srv, err := server.New(context.Background(), server.Config{RPCConfig: server.RPCConfig{Host: "127.0.0.1"}, ProfilingConfig: server.ProfilingConfig{ProfilingPort: -1}})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	c := servertest.DialRaw(t, srv)
	c.Send(servertest.RawPost(activatePath, "application/json", `{"clientKey":"idle"}`))
	if status, _, _ := c.Answer(); status != http.StatusOK {
		t.Fatalf("status %d", status)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// An idle connection that held Shutdown up would run it into the
	// context's deadline, and Shutdown would fail.
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if _, err := c.R.ReadByte(); err == nil {
		t.Fatal("idle connection still open after shutdown")
	}
}

// TestHTTP1ShutdownSaysClose: an answer written while the server shuts down
// tells the client not to reuse the connection, as net/http does.
func TestHTTP1ShutdownSaysClose(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	srv := servertest.StartWith(t, []server.Option{server.WithRouter(blockingRouter{started: started, release: release})}, fastPaths)
	c := servertest.DialRaw(t, srv)
	c.Send(servertest.RawPost("/yorkie.v1.YorkieService/AttachDocument", "application/json",
		`{"clientId":"000000000000000000000001","changePack":{"documentKey":"doc-1"}}`))
	<-started
	done := make(chan error, 1)
	go func() { done <- srv.Shutdown(context.Background()) }()
	// The listener closes once draining has begun: wait until a new
	// connection is refused.
	for {
		conn, err := net.Dial("tcp", srv.RPCAddr())
		if err != nil {
			break
		}
		_ = conn.Close()
		time.Sleep(time.Millisecond)
	}
	close(release)
	resp, err := http.ReadResponse(c.R, nil)
	if err != nil {
		t.Fatalf("read answer: %v", err)
	}
	_ = resp.Body.Close()
	if !resp.Close {
		t.Errorf("answer during shutdown does not close the connection: %v", resp.Header)
	}
	if err := <-done; err != nil {
		t.Fatalf("shutdown: %v", err)
	}
}

// blockingRouter holds the first document call until release closes.
type blockingRouter struct {
	started chan struct{}
	release chan struct{}
}

func (r blockingRouter) Route(_ context.Context, call routing.DocumentCall) (routing.Route, error) {
	close(r.started)
	<-r.release
	return routing.Route{Project: call.Project}, nil
}

func (blockingRouter) RelayFailed(context.Context, routing.Route, error) {}

func (blockingRouter) DetachRemote(context.Context, *database.ProjectInfo, string) (map[string]int64, error) {
	return nil, nil
}

func (blockingRouter) SessionKeyHeader() string { return "x-session-key" }
