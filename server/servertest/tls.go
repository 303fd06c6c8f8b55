package servertest

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"testing"

	"connectrpc.com/connect"

	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
	"github.com/yorkie-affinity/yorkie/server"
)

// TLSHTTPClient returns an HTTP client able to carry the protocol over TLS,
// trusting the CAs of pool: HTTP/2 by ALPN for gRPC, HTTP/1.1 otherwise
// (or HTTP/2 for every protocol with h2). Its idle connections are closed
// when the test ends.
func TLSHTTPClient(t testing.TB, p Protocol, pool *x509.CertPool, h2 bool) *http.Client {
	var protocols http.Protocols
	if p == GRPC || h2 {
		protocols.SetHTTP2(true)
	} else {
		protocols.SetHTTP1(true)
	}
	tr := &http.Transport{
		MaxIdleConnsPerHost: 64,
		Protocols:           &protocols,
		TLSClientConfig:     &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// TLSBaseURL returns the https:// URL of the server's RPC port.
func TLSBaseURL(srv *server.Server) string { return "https://" + srv.RPCAddr() }

// TLSClient returns a YorkieService client for srv's TLS port speaking
// protocol p, trusting the CAs of pool.
func TLSClient(t testing.TB, srv *server.Server, p Protocol, pool *x509.CertPool, opts ...connect.ClientOption) v1connect.YorkieServiceClient {
	t.Helper()
	return v1connect.NewYorkieServiceClient(TLSHTTPClient(t, p, pool, false), TLSBaseURL(srv), append(p.ClientOptions(), opts...)...)
}
