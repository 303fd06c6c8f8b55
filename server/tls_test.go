package server_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"io/fs"
	"math/big"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/certfile"
	"github.com/yorkie-affinity/yorkie/server/certfile/certtest"
	"github.com/yorkie-affinity/yorkie/server/servertest"
	"github.com/yorkie-affinity/yorkie/server/servertest/poll"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
)

// protoRecorder records the HTTP version and TLS of every answer.
type protoRecorder struct {
	rt     http.RoundTripper
	mu     sync.Mutex
	protos map[string]int
}

func (p *protoRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := p.rt.RoundTrip(r)
	if err == nil {
		p.mu.Lock()
		if resp.TLS == nil {
			p.protos["cleartext"]++
		} else {
			p.protos[resp.Proto]++
		}
		p.mu.Unlock()
	}
	return resp, err
}

func (p *protoRecorder) seen() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]int{}
	for k, v := range p.protos {
		out[k] = v
	}
	return out
}

// startTLS starts a server whose RPC port serves a certificate of a new CA,
// and returns it with the CA's pool.
func startTLS(t *testing.T, opts ...func(*server.Config)) (*server.Server, *x509.CertPool, certtest.Files, *certtest.CA) {
	t.Helper()
	ca := certtest.NewCA(t, "test CA")
	files, _ := ca.WriteLeaf(t, t.TempDir(), "rpc", certtest.Leaf{})
	srv := servertest.Start(t, append([]func(*server.Config){func(c *server.Config) {
		c.RPCCertFile, c.RPCKeyFile = files.Cert, files.Key
	}}, opts...)...)
	return srv, ca.Pool(), files, ca
}

// TestRPCOverTLS: every protocol syncs a document and watches it over TLS,
// on HTTP/1.1 and HTTP/2 by ALPN, with the fast HTTP/1.1 loop and without.
func TestRPCOverTLS(t *testing.T) {
	for _, fast := range []bool{true, false} {
		name := "fast-http1"
		if !fast {
			name = "net-http"
		}
		t.Run(name, func(t *testing.T) {
			srv, pool, _, _ := startTLS(t, func(c *server.Config) { c.DisableFastHTTP1 = !fast })
			for _, p := range servertest.Protocols() {
				for _, h2 := range []bool{false, true} {
					if p == servertest.GRPC && !h2 {
						continue // gRPC needs HTTP/2
					}
					want := "HTTP/1.1"
					if h2 {
						want = "HTTP/2.0"
					}
					t.Run(p.String()+"/"+want, func(t *testing.T) {
						hc := servertest.TLSHTTPClient(t, p, pool, h2)
						rec := &protoRecorder{rt: hc.Transport, protos: map[string]int{}}
						hc.Transport = rec
						client := v1connect.NewYorkieServiceClient(hc, servertest.TLSBaseURL(srv), p.ClientOptions()...)
						key := wire.UniqueKey(t, "tls")
						a, b := wire.NewReplica(t, client), wire.NewReplica(t, client)
						a.MustAttach(key)
						b.MustAttach(key)
						watch := b.Watch(t)
						watch.Next(t)
						a.Edit(3)
						a.MustPushPull()
						changed := func() bool {
							return watch.Next(t).GetEvent().GetDocEvent().GetEvent().GetType() == api.DocEventType_DOC_EVENT_TYPE_DOCUMENT_CHANGED
						}
						for !changed() { // b hears of a's changes
						}
						b.MustPushPull()
						for seq := uint32(1); seq <= a.LastSeq; seq++ {
							assert.Contains(t, b.Pulled, fmt.Sprintf("%s/%d", a.ID, seq), "b pulled a's change %d", seq)
						}
						watch.Close()
						seen := rec.seen()
						assert.Positive(t, seen[want], "answers came over TLS as %s: %v", want, seen)
						assert.Len(t, seen, 1, "every answer came over TLS as %s: %v", want, seen)
					})
				}
			}
			if fast {
				assert.Positive(t, counter(t, srv, "yorkie_rpc_http1_fast_requests_total"),
					"the fast loop served the HTTP/1.1 calls over TLS")
			}
		})
	}
}

// counter reads a counter without labels from the server's registry.
func counter(t *testing.T, srv *server.Server, name string) float64 {
	t.Helper()
	fams, err := srv.Registry().Gather()
	require.NoError(t, err)
	for _, f := range fams {
		if f.GetName() == name {
			var total float64
			for _, m := range f.GetMetric() {
				total += m.GetCounter().GetValue()
			}
			return total
		}
	}
	return 0
}

// TestTLSPortRefusesCleartext: an HTTP/1.1 request in cleartext is told
// the port speaks HTTPS, a gRPC client in cleartext fails, and the server
// serves TLS clients as before.
func TestTLSPortRefusesCleartext(t *testing.T) {
	for _, fast := range []bool{true, false} {
		srv, pool, _, _ := startTLS(t, func(c *server.Config) { c.DisableFastHTTP1 = !fast })
		conn, err := net.Dial("tcp", srv.RPCAddr())
		require.NoError(t, err)
		_, err = io.WriteString(conn, servertest.RawPost("/yorkie.v1.YorkieService/ActivateClient", "application/json", `{"clientKey":"k"}`))
		require.NoError(t, err)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		_ = conn.Close()
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
		assert.Contains(t, string(body), "HTTPS")

		_, err = servertest.Client(t, srv, servertest.GRPC).ActivateClient(wire.Context(t),
			connect.NewRequest(&api.ActivateClientRequest{ClientKey: "cleartext"}))
		require.Error(t, err, "a cleartext gRPC call to the TLS port fails")

		_, err = servertest.TLSClient(t, srv, servertest.ConnectJSON, pool).ActivateClient(wire.Context(t),
			connect.NewRequest(&api.ActivateClientRequest{ClientKey: "after"}))
		require.NoError(t, err, "the server still serves TLS clients")
	}
}

// TestTLSClientMustTrustCA: a client that does not trust the server's CA
// fails the handshake, and says why.
func TestTLSClientMustTrustCA(t *testing.T) {
	srv, _, _, _ := startTLS(t)
	other := certtest.NewCA(t, "another CA")
	_, err := servertest.TLSClient(t, srv, servertest.ConnectJSON, other.Pool()).ActivateClient(wire.Context(t),
		connect.NewRequest(&api.ActivateClientRequest{ClientKey: "k"}))
	require.Error(t, err)
	var unknown x509.UnknownAuthorityError
	assert.ErrorAs(t, err, &unknown)
}

// TestTLSStartErrors: start-up stops with an error naming what is wrong.
func TestTLSStartErrors(t *testing.T) {
	dir := t.TempDir()
	ca := certtest.NewCA(t, "test CA")
	good, _ := ca.WriteLeaf(t, dir, "good", certtest.Leaf{})
	expired, _ := ca.WriteLeaf(t, dir, "expired", certtest.Leaf{
		NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-24 * time.Hour),
	})
	other, _ := ca.WriteLeaf(t, dir, "other", certtest.Leaf{})
	garbage := dir + "/garbage.pem"
	certtest.WriteFile(t, garbage, []byte("not a certificate"))
	for _, tc := range []struct {
		name    string
		cfg     func(*server.Config)
		is      error
		message string
	}{
		{"missing certificate", func(c *server.Config) { c.RPCCertFile, c.RPCKeyFile = dir+"/none.crt", good.Key }, fs.ErrNotExist, "none.crt"},
		{"missing key", func(c *server.Config) { c.RPCCertFile, c.RPCKeyFile = good.Cert, dir+"/none.key" }, fs.ErrNotExist, "none.key"},
		{"expired", func(c *server.Config) { c.RPCCertFile, c.RPCKeyFile = expired.Cert, expired.Key }, certfile.ErrExpired, "expired.crt"},
		{"key of another certificate", func(c *server.Config) { c.RPCCertFile, c.RPCKeyFile = good.Cert, other.Key }, nil, "private key does not match"},
		{"certificate without key", func(c *server.Config) { c.RPCCertFile = good.Cert }, server.ErrTLSConfig, "--rpc-key-file"},
		{"CA without TLS", func(c *server.Config) { c.ClusterCAFile = ca.WriteCA(t, dir, "ca") }, server.ErrTLSConfig, "--cluster-ca-file"},
		{"CA file without certificates", func(c *server.Config) {
			c.RPCCertFile, c.RPCKeyFile, c.ClusterCAFile = good.Cert, good.Key, garbage
		}, certfile.ErrNoCertificates, "garbage.pem"},
		{"profiling certificate expired", func(c *server.Config) {
			c.ProfilingCertFile, c.ProfilingKeyFile = expired.Cert, expired.Key
		}, certfile.ErrExpired, "profiling certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := server.Config{RPCConfig: server.RPCConfig{Host: "127.0.0.1"}}
			tc.cfg(&cfg)
			_, err := server.New(context.Background(), cfg)
			require.Error(t, err)
			if tc.is != nil {
				assert.ErrorIs(t, err, tc.is)
			}
			assert.Contains(t, err.Error(), tc.message)
		})
	}
}

// serialOf returns the serial number of the certificate a new TLS
// connection to addr is served.
func serialOf(t *testing.T, addr string, pool *x509.CertPool) *big.Int {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12})
	require.NoError(t, err)
	defer func() { _ = conn.Close() }()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber
}

// TestTLSCertificateRotation: certificates replaced while clients sync (on
// kept-alive connections and on a new connection per call) serve new
// connections, and no call fails; a replacement that does not load leaves
// the current certificate in service.
func TestTLSCertificateRotation(t *testing.T) {
	srv, pool, files, ca := startTLS(t, func(c *server.Config) { c.CertCheckInterval = 10 * time.Millisecond })
	dir := files.Cert[:strings.LastIndexByte(files.Cert, '/')]
	first := serialOf(t, srv.RPCAddr(), pool)

	var calls, failures atomic.Int64
	var failed atomic.Value
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	key := wire.UniqueKey(t, "rotation")
	for _, keepAlive := range []bool{true, false} {
		hc := servertest.TLSHTTPClient(t, servertest.ConnectJSON, pool, false)
		hc.Transport.(*http.Transport).DisableKeepAlives = !keepAlive
		r := wire.NewReplica(t, v1connect.NewYorkieServiceClient(hc, servertest.TLSBaseURL(srv), servertest.ConnectJSON.ClientOptions()...))
		r.MustAttach(key)
		wg.Go(func() {
			for ctx.Err() == nil {
				r.Edit(1)
				if _, err := r.PushPull(context.Background()); err != nil {
					failures.Add(1)
					failed.Store(err)
					return
				}
				calls.Add(1)
			}
		})
	}
	waitCalls := func(n int64) {
		t.Helper()
		target := calls.Load() + n
		poll.UntilTrue(t, 30*time.Second, "clients sync", func() bool { return calls.Load() >= target || failures.Load() > 0 })
	}
	waitCalls(5)

	_, second := ca.WriteLeaf(t, dir, "rpc", certtest.Leaf{})
	poll.UntilTrue(t, 30*time.Second, "new connections get the new certificate", func() bool {
		return serialOf(t, srv.RPCAddr(), pool).Cmp(second) == 0
	})
	waitCalls(5)

	// An expired replacement does not load: the second stays.
	// (Replacing the key before the certificate may have failed a reload
	// already: the pair did not match for a moment.)
	failedBefore := labelled(t, srv, "yorkie_tls_certificate_reloads_total", "failed")
	ca.WriteLeaf(t, dir, "rpc", certtest.Leaf{NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-time.Hour)})
	poll.UntilTrue(t, 30*time.Second, "the failed reload is counted", func() bool {
		_ = serialOf(t, srv.RPCAddr(), pool) // a handshake looks at the files
		return labelled(t, srv, "yorkie_tls_certificate_reloads_total", "failed") > failedBefore
	})
	assert.Equal(t, 0, serialOf(t, srv.RPCAddr(), pool).Cmp(second), "the current certificate stays in service")
	waitCalls(5)
	cancel()
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		t.Fatalf("a call failed during the rotation: %v", err)
	}
	assert.NotEqual(t, 0, first.Cmp(second))
	assert.Equal(t, float64(1), labelled(t, srv, "yorkie_tls_certificate_reloads_total", "ok"))
}

// labelled reads the sample of a counter with the given result label.
func labelled(t *testing.T, srv *server.Server, name, result string) float64 {
	t.Helper()
	fams, err := srv.Registry().Gather()
	require.NoError(t, err)
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" && l.GetValue() == result {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// TestProfilingOverTLS: the profiling port serves /metrics over TLS with
// its own certificate, and refuses cleartext.
func TestProfilingOverTLS(t *testing.T) {
	ca := certtest.NewCA(t, "ops CA")
	files, _ := ca.WriteLeaf(t, t.TempDir(), "profiling", certtest.Leaf{})
	srv := servertest.Start(t, func(c *server.Config) {
		c.ProfilingCertFile, c.ProfilingKeyFile = files.Cert, files.Key
	})
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}}}
	t.Cleanup(hc.CloseIdleConnections)
	resp, err := hc.Get("https://" + srv.ProfilingAddr() + "/metrics")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(body), "yorkie_server_version")

	resp, err = http.Get("http://" + srv.ProfilingAddr() + "/metrics")
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "cleartext is told to use HTTPS")
	// The RPC port stays cleartext.
	_, err = servertest.Client(t, srv, servertest.ConnectJSON).ActivateClient(wire.Context(t),
		connect.NewRequest(&api.ActivateClientRequest{ClientKey: "k"}))
	require.NoError(t, err)
}
