package bounds_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"

	clusterv1 "github.com/yorkie-affinity/yorkie/api/yorkie/cluster/v1"
	"github.com/yorkie-affinity/yorkie/api/yorkie/cluster/v1/clusterv1connect"
	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/routing"
	"github.com/yorkie-affinity/yorkie/server/rpc/errinfo"
	"github.com/yorkie-affinity/yorkie/server/servertest"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
)

// bombMember is what one gzip member of a bomb inflates to.
const bombMember = 16 << 20

// gzipBomb returns a body that inflates to members times 16 MiB of zeros:
// one gzip member of about 16 KiB repeated, which gzip readers inflate one
// after the other.
func gzipBomb(t testing.TB, members int) []byte {
	t.Helper()
	const member = bombMember
	var one bytes.Buffer
	zw, err := gzip.NewWriterLevel(&one, gzip.BestCompression)
	wire.Must(t, err, "gzip writer")
	_, err = zw.Write(make([]byte, member))
	wire.Must(t, err, "compress")
	wire.Must(t, zw.Close(), "compress")
	return bytes.Repeat(one.Bytes(), members)
}

// swapBody sends every request with body instead of the client's, marked
// as gzip in the way of the protocol.
type swapBody struct {
	base      http.RoundTripper
	body      []byte
	enveloped bool // gRPC: the body is one compressed message
}

func (s swapBody) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	body := s.body
	if s.enveloped {
		body = make([]byte, 5, 5+len(s.body))
		body[0] = 1
		binary.BigEndian.PutUint32(body[1:], uint32(len(s.body)))
		body = append(body, s.body...)
		req.Header.Set("Grpc-Encoding", "gzip")
	} else {
		req.Header.Set("Content-Encoding", "gzip")
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	req.GetBody = nil
	return s.base.RoundTrip(req)
}

// allocated runs f and returns how many bytes the process allocated
// meanwhile, the server's work included.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestGzipBombRefused sends gzip bombs to the health check (Connect and
// gRPC), to the ClusterService and to the YorkieService: a megabyte that
// inflates to a gigabyte, and 48 KiB that inflate to 48 MiB (under every
// bound on the wire, over every bound inflated). Each is refused as too
// large, having inflated no more than its bound.
func TestGzipBombRefused(t *testing.T) {
	for _, members := range []int{64, 3} {
		t.Run(fmt.Sprintf("%d MiB", members*bombMember>>20), func(t *testing.T) {
			testGzipBomb(t, gzipBomb(t, members), members*bombMember)
		})
	}
}

func testGzipBomb(t *testing.T, bomb []byte, inflated int) {
	const secret = "bomb-test-secret"
	srv := servertest.Start(t, func(cfg *server.Config) { cfg.ClusterSecret = secret })
	url := servertest.BaseURL(srv)
	client := func(p servertest.Protocol) *http.Client {
		return &http.Client{Transport: swapBody{
			base: servertest.HTTPClient(t, p).Transport, body: bomb, enveloped: p == servertest.GRPC,
		}}
	}
	calls := map[string]func() error{
		"health over connect": func() error {
			_, err := grpchealth.NewClient(client(servertest.ConnectProto), url).
				Check(wire.Context(t), &grpchealth.CheckRequest{})
			return err
		},
		"health over grpc": func() error {
			_, err := grpchealth.NewClient(client(servertest.GRPC), url, connect.WithGRPC()).
				Check(wire.Context(t), &grpchealth.CheckRequest{})
			return err
		},
		"cluster service with the secret": func() error {
			c := clusterv1connect.NewClusterServiceClient(client(servertest.ConnectProto), url)
			req := connect.NewRequest(&clusterv1.DetachClientDocumentRequest{})
			req.Header().Set(routing.HeaderSecret, secret)
			_, err := c.DetachClientDocument(wire.Context(t), req)
			return err
		},
		"yorkie service": func() error {
			_, err := v1connect.NewYorkieServiceClient(client(servertest.ConnectProto), url).
				ActivateClient(wire.Context(t), connect.NewRequest(&api.ActivateClientRequest{ClientKey: "k"}))
			return err
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			var err error
			n := allocated(func() { err = call() })
			t.Logf("%s: %d KiB compressed, inflating to %d MiB: the process allocated %.1f MiB; answer: %v",
				name, len(bomb)>>10, inflated>>20, float64(n)/(1<<20), err)
			wantCode(t, err, connect.CodeInvalidArgument, errinfo.CodeRequestTooLarge)
		})
	}
}

// wantCode checks a Connect error's code and ErrorInfo code.
func wantCode(t testing.TB, err error, code connect.Code, name string) {
	t.Helper()
	var cerr *connect.Error
	if !errors.As(err, &cerr) || cerr.Code() != code || wire.ErrorInfo(cerr)["code"] != name {
		t.Fatalf("got %v, want %s with ErrorInfo code %s", err, code, name)
	}
}

// TestClusterSecretCheckedBeforeBody declares a 100 MB body and sends none
// of it: a ClusterService call without the secret is refused at once.
func TestClusterSecretCheckedBeforeBody(t *testing.T) {
	srv := servertest.Start(t)
	c := servertest.DialRaw(t, srv)
	c.Send("POST /yorkie.cluster.v1.ClusterService/DetachClientDocument HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
		"Content-Type: application/proto\r\nContent-Length: 100000000\r\n\r\n")
	status, h, body := c.Answer()
	var e struct{ Code string }
	_ = json.Unmarshal([]byte(body), &e)
	if status != http.StatusForbidden || e.Code != "permission_denied" {
		t.Fatalf("call without the secret: %d %v %s, want 403 permission_denied", status, h, body)
	}
	if status := closedAfter(t, c); status != 0 {
		t.Fatalf("a second answer: %d", status)
	}
}

// slowServer starts a server whose read timeouts are short, with the
// HTTP/1.1 fast loop whatever the environment says: its cases name it.
func slowServer(t *testing.T, secret string) *server.Server {
	return servertest.Start(t, func(cfg *server.Config) {
		cfg.DisableFastHTTP1 = false
		cfg.ReadHeaderTimeout = 300 * time.Millisecond
		cfg.ReadBodyTimeout = 300 * time.Millisecond
		cfg.ClusterSecret = secret
	})
}

// closedAfter reads what the server sends until it closes the connection;
// it fails the test if the connection outlives the test's own generous
// deadline. It returns the status of the answer, 0 for none.
func closedAfter(t *testing.T, c *servertest.RawConn) int {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	status := 0
	if resp, err := http.ReadResponse(c.R, nil); err == nil {
		status = resp.StatusCode
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	} else if isTimeout(err) {
		t.Fatalf("the server holds the slow connection: %v", err)
	}
	if _, err := io.Copy(io.Discard, c.R); err != nil {
		t.Fatalf("the connection did not close: %v", err)
	}
	return status
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

const activatePath = "/yorkie.v1.YorkieService/ActivateClient"

// TestSlowClientsCut sends heads and bodies that stop halfway, on the fast
// loop and on net/http, to every endpoint kind: each connection is answered
// 408 (or, for a head net/http reads, 400 or closed) and closed at the bound.
func TestSlowClientsCut(t *testing.T) {
	const secret = "slow-test-secret"
	srv := slowServer(t, secret)
	head := func(path, contentType string, length int, extra ...string) string {
		h := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\nContent-Type: %s\r\n", path, contentType)
		for _, e := range extra {
			h += e + "\r\n"
		}
		return h + fmt.Sprintf("Content-Length: %d\r\n\r\n", length)
	}
	cases := []struct {
		name string
		send func(c *servertest.RawConn)
		want []int
	}{
		{"head, fast loop", func(c *servertest.RawConn) {
			c.Send("POST " + activatePath + " HTTP/1.1\r\nHost: 127.0.0.1\r\n")
		}, []int{http.StatusRequestTimeout}},
		{"body under 16 KiB, fast loop", func(c *servertest.RawConn) {
			c.Send(head(activatePath, "application/json", 200) + `{"clientKey":`)
		}, []int{http.StatusRequestTimeout}},
		{"body of 100 KiB, net/http", func(c *servertest.RawConn) {
			c.Send(head(activatePath, "application/json", 100<<10) + strings.Repeat(" ", 20<<10))
		}, []int{http.StatusRequestTimeout}},
		{"health check body", func(c *servertest.RawConn) {
			c.Send(head("/grpc.health.v1.Health/Check", "application/proto", 1000) + "\x0a")
		}, []int{http.StatusRequestTimeout}},
		{"cluster service body", func(c *servertest.RawConn) {
			c.Send(head("/yorkie.cluster.v1.ClusterService/DetachClientDocument", "application/proto", 1000,
				routing.HeaderSecret+": "+secret) + "\x0a")
		}, []int{http.StatusRequestTimeout}},
		{"healthz body", func(c *servertest.RawConn) {
			c.Send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\nx")
		}, []int{http.StatusRequestTimeout}},
		{"head after the hand-over, net/http", func(c *servertest.RawConn) {
			c.Send(servertest.RawPreflight(activatePath))
			if status, _, _ := c.Answer(); status != http.StatusNoContent {
				t.Fatalf("preflight: %d", status)
			}
			c.Send("POST " + activatePath + " HTTP/1.1\r\nHost: 127.0.0.1\r\n")
		}, []int{http.StatusBadRequest, http.StatusRequestTimeout, 0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := servertest.DialRaw(t, srv)
			tc.send(c)
			if status := closedAfter(t, c); !containsInt(tc.want, status) {
				t.Fatalf("answer %d, want one of %v", status, tc.want)
			}
		})
	}
	t.Run("nothing sent", func(t *testing.T) {
		if status := closedAfter(t, servertest.DialRaw(t, srv)); status != 0 {
			t.Fatalf("an idle connection got an answer: %d", status)
		}
	})
}

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// TestSlowBodyOverHTTP2 stops a gRPC request body halfway: the call ends
// with deadline_exceeded at the bound, the connection serving on.
func TestSlowBodyOverHTTP2(t *testing.T) {
	srv := slowServer(t, "")
	pr, pw := io.Pipe()
	defer pw.Close()
	req, err := http.NewRequestWithContext(wire.Context(t), http.MethodPost,
		servertest.BaseURL(srv)+"/grpc.health.v1.Health/Check", pr)
	wire.Must(t, err, "build request")
	req.Header.Set("Content-Type", "application/grpc")
	req.Header.Set("Te", "trailers")
	go func() { _, _ = pw.Write([]byte{0, 0, 0, 0, 10}) }() // an envelope for 10 bytes, then nothing
	resp, err := servertest.HTTPClient(t, servertest.GRPC).Do(req)
	wire.Must(t, err, "slow grpc call")
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if got := resp.Trailer.Get("Grpc-Status"); got != fmt.Sprint(int(connect.CodeDeadlineExceeded)) {
		t.Fatalf("grpc-status %q, want %d (deadline_exceeded); header %v trailer %v",
			got, connect.CodeDeadlineExceeded, resp.Header, resp.Trailer)
	}
}

// TestStreamsOutliveBodyTimeout: the body timeout bounds the request of a
// Watch stream, not the stream, on either path.
func TestStreamsOutliveBodyTimeout(t *testing.T) {
	srv := slowServer(t, "")
	for _, p := range []servertest.Protocol{servertest.ConnectJSON, servertest.GRPC} {
		t.Run(p.String(), func(t *testing.T) {
			c := servertest.Client(t, srv, p)
			watcher, writer := wire.NewReplica(t, c), wire.NewReplica(t, c)
			key := wire.UniqueKey(t, "doc")
			watcher.MustAttach(key)
			writer.MustAttach(key)
			stream := watcher.Watch(t)
			stream.Next(t)          // the initialization
			time.Sleep(time.Second) // past the bound, so that a deadline left set would have cut the stream
			writer.NewChange(nil)
			writer.MustPushPull()
			for {
				m := stream.Next(t)
				if m.GetEvent().GetDocEvent().GetEvent().GetType() == api.DocEventType_DOC_EVENT_TYPE_DOCUMENT_CHANGED {
					return
				}
			}
		})
	}
}

// TestOversizedAnswerIsNotRetryable: a request over the limit gets
// invalid_argument with ErrRequestTooLarge over every protocol, whether its
// length is declared or not.
func TestOversizedAnswerIsNotRetryable(t *testing.T) {
	srv := servertest.Start(t, func(cfg *server.Config) { cfg.MaxRequestBytes = 1 << 10 })
	for _, p := range servertest.Protocols() {
		t.Run(p.String(), func(t *testing.T) {
			_, err := servertest.Client(t, srv, p).ActivateClient(context.Background(),
				connect.NewRequest(&api.ActivateClientRequest{ClientKey: "k", Metadata: map[string]string{"m": strings.Repeat("x", 2<<10)}}))
			wantCode(t, err, connect.CodeInvalidArgument, errinfo.CodeRequestTooLarge)
		})
	}
}
