package rpc_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/yorkie-affinity/yorkie/server/rpc"
)

// TestInflightRequestBytesAreBounded: each request is bounded on its own,
// and the bytes all requests being served hold, read and decompressed, are
// bounded together. A compressed request that would pass the node's bound
// while another is being served is refused with unavailable (clients retry);
// once the first is answered, the same request goes through.
func TestInflightRequestBytesAreBounded(t *testing.T) {
	const path = "/yorkie.v1.YorkieService/PushPullChanges"
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	h := rpc.BoundRequests(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.HasPrefix(body, []byte("hold")) {
			arrived <- struct{}{}
			<-release
		}
		w.WriteHeader(http.StatusOK)
	}), rpc.Bounds{
		Rules:            []rpc.BoundRule{{Prefix: "/yorkie.v1.YorkieService/", MaxBytes: 8 << 20}},
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
