package http1

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"time"
)

// tlsStateKey carries, in the fallback's connection context, the TLS state
// of a connection the fast loop handed over after reading from it: net/http
// sees such a connection as cleartext, and would leave Request.TLS nil.
type tlsStateKey struct{}

// withTLS makes the fallback give the requests of handed-over TLS
// connections their TLS state, as it does for the connections it accepts.
func withTLS(fallback *http.Server) {
	connContext := fallback.ConnContext
	fallback.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		if connContext != nil {
			ctx = connContext(ctx, c)
		}
		if rc, ok := c.(*replayConn); ok {
			if tc, ok := rc.Conn.(*tls.Conn); ok {
				state := tc.ConnectionState()
				ctx = context.WithValue(ctx, tlsStateKey{}, &state)
			}
		}
		return ctx
	}
	next := fallback.Handler
	fallback.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil {
			if state, ok := r.Context().Value(tlsStateKey{}).(*tls.ConnectionState); ok {
				r.TLS = state
			}
		}
		next.ServeHTTP(w, r)
	})
}

// handshake completes the TLS handshake of a connection within the header
// timeout. It reports whether the connection goes on; a client that spoke
// cleartext HTTP to the port is told so, as net/http tells it.
func (fc *fastConn) handshake(ctx context.Context, tc *tls.Conn, by time.Time) bool {
	_ = tc.SetDeadline(by)
	err := tc.HandshakeContext(ctx)
	_ = tc.SetWriteDeadline(time.Time{})
	if err == nil {
		state := tc.ConnectionState()
		fc.tls = &state
		return true
	}
	var re tls.RecordHeaderError
	if errors.As(err, &re) && re.Conn != nil && looksLikeHTTP(re.RecordHeader) {
		_ = re.Conn.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = io.WriteString(re.Conn, "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n")
	}
	fc.srv.logger.Debug("rpc port TLS handshake failed", "remote", fc.remote, "error", err)
	return false
}

// looksLikeHTTP reports whether the first bytes of a connection, read as a
// TLS record header, are an HTTP/1.x request line instead.
func looksLikeHTTP(hdr [5]byte) bool {
	switch string(hdr[:]) {
	case "GET /", "HEAD ", "POST ", "PUT /", "OPTIO":
		return true
	}
	return false
}
