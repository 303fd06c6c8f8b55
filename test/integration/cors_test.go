package integration_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/servertest"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
)

// TestCORS checks what a browser running the JS SDK on another origin needs:
// preflights are answered and answers carry the CORS headers.
func TestCORS(t *testing.T) {
	srv := servertest.Start(t, func(cfg *server.Config) { cfg.AllowedOrigins = []string{"https://app.example"} })
	hc := servertest.HTTPClient(t, servertest.ConnectJSON)
	url := servertest.BaseURL(srv) + v1connect.YorkieServiceActivateClientProcedure

	preflight := func(origin string) *http.Response {
		t.Helper()
		req, err := http.NewRequestWithContext(wire.Context(t), http.MethodOptions, url, nil)
		wire.Must(t, err, "build preflight")
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "content-type,connect-protocol-version,x-yorkie-user-agent,x-shard-key")
		resp, err := hc.Do(req)
		wire.Must(t, err, "preflight")
		resp.Body.Close()
		return resp
	}
	resp := preflight("https://app.example")
	if resp.StatusCode != http.StatusNoContent ||
		resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example" ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "x-shard-key") ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Methods"), "POST") {
		t.Fatalf("preflight from an allowed origin: %d %v", resp.StatusCode, resp.Header)
	}
	if resp := preflight("https://evil.example"); resp.StatusCode != http.StatusForbidden || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("preflight from another origin: %d %v", resp.StatusCode, resp.Header)
	}

	req, err := http.NewRequestWithContext(wire.Context(t), http.MethodPost, url, strings.NewReader(`{"clientKey":"browser"}`))
	wire.Must(t, err, "build request")
	req.Header.Set("Origin", "https://app.example")
	req.Header.Set("Content-Type", "application/json")
	post, err := hc.Do(req)
	wire.Must(t, err, "post")
	post.Body.Close()
	if post.StatusCode != http.StatusOK || post.Header.Get("Access-Control-Allow-Origin") != "https://app.example" ||
		!strings.Contains(post.Header.Get("Access-Control-Expose-Headers"), "Grpc-Status") {
		t.Fatalf("call from an allowed origin: %d %v", post.StatusCode, post.Header)
	}
}
