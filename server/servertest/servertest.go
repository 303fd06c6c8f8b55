// Package servertest starts real servers on loopback ports for tests and
// builds YorkieService clients for them over each supported protocol.
package servertest

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"testing"
	"time"

	"connectrpc.com/connect"
	"golang.org/x/crypto/bcrypt"

	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/admin"
)

// shutdownTimeout bounds the graceful shutdown a test's cleanup waits for.
const shutdownTimeout = 10 * time.Second

// StockRPCEnv, set to 1, makes Start serve with both of the RPC port's
// fast paths off (Config.DisableFastHTTP1 and DisableFastJSON): net/http
// and protojson alone, so that a whole suite can run on the stock paths.
const StockRPCEnv = "YORKIE_TEST_STOCK_RPC"

// Start starts a server on 127.0.0.1 with free ports, an in-memory database
// and discarded logs, after applying opts to its Config, and shuts it down
// when the test ends.
func Start(t testing.TB, opts ...func(*server.Config)) *server.Server {
	t.Helper()
	return StartWith(t, nil, opts...)
}

// StartWith starts a server as Start does, built with the test seams given
// (server.WithRouter, server.WithClock, ...).
func StartWith(t testing.TB, seams []server.Option, opts ...func(*server.Config)) *server.Server {
	t.Helper()
	stock := os.Getenv(StockRPCEnv) == "1"
	cfg := server.Config{
		RPCConfig: server.RPCConfig{Host: "127.0.0.1", DisableFastHTTP1: stock, DisableFastJSON: stock},
		Logger:    slog.New(slog.DiscardHandler),
		// Every start hashes the default admin password: keep it cheap.
		Admin: admin.Settings{PasswordCost: bcrypt.MinCost},
	}
	for _, opt := range opts {
		opt(&cfg)
	}
	srv, err := server.New(context.Background(), cfg, seams...)
	if err != nil {
		t.Fatalf("create server: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shut down server: %v", err)
		}
	})
	if err := srv.Start(context.Background()); err != nil {
		t.Fatalf("start server: %v", err)
	}
	return srv
}

// Protocol is the wire protocol and codec a test client speaks.
type Protocol int

// Client protocols.
const (
	// ConnectJSON is the Connect protocol with JSON, the JS SDK's default.
	ConnectJSON Protocol = iota
	// ConnectProto is the Connect protocol with binary protobuf.
	ConnectProto
	// GRPC is gRPC over cleartext HTTP/2.
	GRPC
	// GRPCWeb is gRPC-web with binary protobuf, the SDK's alternative.
	GRPCWeb
)

// Protocols lists every protocol, for table tests.
func Protocols() []Protocol { return []Protocol{ConnectJSON, ConnectProto, GRPC, GRPCWeb} }

// String names the protocol, for subtest names.
func (p Protocol) String() string {
	switch p {
	case ConnectJSON:
		return "connect-json"
	case ConnectProto:
		return "connect-proto"
	case GRPC:
		return "grpc"
	case GRPCWeb:
		return "grpc-web"
	}
	return "unknown"
}

// ClientOptions returns the connect client options of the protocol.
func (p Protocol) ClientOptions() []connect.ClientOption {
	switch p {
	case ConnectJSON:
		return []connect.ClientOption{connect.WithProtoJSON()}
	case GRPC:
		return []connect.ClientOption{connect.WithGRPC()}
	case GRPCWeb:
		return []connect.ClientOption{connect.WithGRPCWeb()}
	}
	return nil
}

// HTTPClient returns an HTTP client able to carry the protocol: cleartext
// HTTP/2 with prior knowledge for gRPC, HTTP/1.1 otherwise. Its idle
// connections are closed when the test ends.
func HTTPClient(t testing.TB, p Protocol) *http.Client {
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	if p == GRPC {
		var protocols http.Protocols
		protocols.SetUnencryptedHTTP2(true)
		tr.Protocols = &protocols
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// BaseURL returns the http:// URL of the server's RPC port.
func BaseURL(srv *server.Server) string { return "http://" + srv.RPCAddr() }

// Client returns a YorkieService client for srv speaking protocol p.
func Client(t testing.TB, srv *server.Server, p Protocol, opts ...connect.ClientOption) v1connect.YorkieServiceClient {
	t.Helper()
	return v1connect.NewYorkieServiceClient(HTTPClient(t, p), BaseURL(srv), append(p.ClientOptions(), opts...)...)
}
