package bounds_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/rpc/bounds"
	"github.com/yorkie-affinity/yorkie/server/servertest"
	"github.com/yorkie-affinity/yorkie/server/servertest/poll"
)

// TestInflightRequestBytesAreBounded: each request is bounded on its own,
// and the bytes all requests being served hold, read and decompressed, are
// bounded together. A compressed request that would pass the node's bound
// while another is being served is refused with unavailable (clients retry);
// once the first is answered, the same request goes through.
func TestInflightRequestBytesAreBounded(t *testing.T) {
	const path = "/yorkie.v1.YorkieService/PushPullChanges"
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	h := bounds.New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.HasPrefix(body, []byte("hold")) {
			arrived <- struct{}{}
			<-release
		}
		w.WriteHeader(http.StatusOK)
	}), bounds.Config{
		Rules:            []bounds.Rule{{Prefix: "/yorkie.v1.YorkieService/", MaxBytes: 8 << 20}},
		MaxInflightBytes: 10 << 20,
	})
	srv := httptest.NewServer(h)
	defer srv.Close()

	post := func(body []byte) int {
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		_, _ = zw.Write(body)
		require.NoError(t, zw.Close())
		req, err := http.NewRequest(http.MethodPost, srv.URL+path, &z)
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/proto")
		req.Header.Set("Content-Encoding", "gzip")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	big := func(prefix string) []byte { return append([]byte(prefix), make([]byte, 6<<20)...) }

	held := make(chan int, 1)
	go func() { held <- post(big("hold")) }()
	<-arrived
	require.Equal(t, http.StatusServiceUnavailable, post(big("next")), "6 MiB more while 6 MiB are held passes the 10 MiB bound")
	require.Equal(t, http.StatusOK, post([]byte("small")), "a small request still fits")
	close(release)
	require.Equal(t, http.StatusOK, <-held)
	require.Equal(t, http.StatusOK, post(big("next")), "the same request once the first is answered")
}

// TestServerInflightBoundIsItsSetting: the RPC port's bound on the bytes
// requests hold together is the server's MaxInflightRequestBytes. Two
// requests whose declared 1000 KiB bodies are still arriving hold them; a
// third of 100 KiB passes 2 MiB and gets unavailable at once; once the
// first is answered, the same third request is served. A bound below twice
// the largest request is refused by New.
func TestServerInflightBoundIsItsSetting(t *testing.T) {
	_, err := server.New(t.Context(), server.Config{RPCConfig: server.RPCConfig{MaxRequestBytes: 1 << 20, MaxInflightRequestBytes: 2<<20 - 1}})
	require.ErrorContains(t, err, "below twice the largest request")

	srv := servertest.Start(t, func(cfg *server.Config) {
		cfg.MaxRequestBytes = 1 << 20
		cfg.MaxInflightRequestBytes = 2 << 20
		cfg.DisableFastHTTP1 = true // bodies are read as they arrive
	})
	const path = "/yorkie.v1.YorkieService/ActivateClient"
	const slowSize = 1000 << 10
	head := strings.TrimSuffix(servertest.RawPost(path, "application/proto", ""), "content-length: 0\r\n\r\n") +
		fmt.Sprintf("content-length: %d\r\n\r\n", slowSize)
	first, second := servertest.DialRaw(t, srv), servertest.DialRaw(t, srv)
	first.Send(head + "x")
	second.Send(head + "x")

	third := servertest.RawPost(path, "application/proto", strings.Repeat("y", 100<<10))
	status := func() int {
		c := servertest.DialRaw(t, srv)
		c.Send(third)
		code, _, _ := c.Answer()
		return code
	}
	poll.UntilTrue(t, 10*time.Second, "the third request refused while two hold their bytes", func() bool {
		return status() == http.StatusServiceUnavailable
	})

	first.Send(strings.Repeat("x", slowSize-1))
	code, _, _ := first.Answer()
	require.Equal(t, http.StatusBadRequest, code, "the first request is read whole and refused by the handler, not the bound")
	poll.UntilTrue(t, 10*time.Second, "the third request served once the first is answered", func() bool {
		return status() == http.StatusBadRequest
	})
}

// TestGzipBombHoldsNoInflatedBytes: a body that inflates past its bound is
// refused as too large having held only its compressed bytes: under an
// in-flight bound far below the request bound, a bomb gets
// invalid_argument, not unavailable, and a body within both bounds is
// served.
func TestGzipBombHoldsNoInflatedBytes(t *testing.T) {
	const path = "/yorkie.v1.YorkieService/PushPullChanges"
	h := bounds.New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusOK)
	}), bounds.Config{
		Rules:            []bounds.Rule{{Prefix: "/yorkie.v1.YorkieService/", MaxBytes: 8 << 20}},
		MaxInflightBytes: 2 << 20,
	})
	srv := httptest.NewServer(h)
	defer srv.Close()
	post := func(inflated int) int {
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		_, _ = zw.Write(make([]byte, inflated))
		require.NoError(t, zw.Close())
		req, err := http.NewRequest(http.MethodPost, srv.URL+path, &z)
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/proto")
		req.Header.Set("Content-Encoding", "gzip")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, http.StatusBadRequest, post(64<<20), "a bomb is too large, never busy")
	require.Equal(t, http.StatusOK, post(1<<20), "1 MiB inflated fits both bounds")
}
