// Package http1 serves unary RPC calls over HTTP/1.1 keep-alive connections
// on a lean loop of its own, and hands every other connection to a net/http
// server. It exists because net/http's HTTP/1.1 server wakes a goroutine per
// request to watch for the client going away; on a small machine those
// wakeups cost more CPU than a short call itself.
package http1

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Server serves a port. It answers the calls that dominate the load, unary
// calls over HTTP/1.1 keep-alive connections (the JS SDK's), on a lean loop
// of its own, and hands each connection to a net/http server the moment it
// carries anything else: HTTP/2 (gRPC), a stream, a preflight, an unusual
// request. From then on net/http serves it.
//
// net/http's HTTP/1.1 server starts a goroutine per request to notice
// clients going away, and wakes and stops it again after the handler; on a
// small machine those scheduler wakeups cost more CPU than a PushPull itself.
// A unary call here has no such watcher: when its client leaves, the call
// still completes and the answer is dropped with the connection.
type Server struct {
	handler           http.Handler
	fallback          *http.Server
	logger            *slog.Logger
	readHeaderTimeout time.Duration
	idleTimeout       time.Duration
	bodyTimeout       time.Duration
	maxBody           int
	paths             map[string]bool   // served here
	headerNames       map[string]string // common header names, canonical
	contentTypes      map[string]bool   // unary content types, served here

	handoff *handoffListener
	tls     *tls.Config

	mu      sync.Mutex
	ln      net.Listener
	conns   map[*fastConn]bool // the value is whether a request is in flight
	closing bool
	// draining mirrors closing for the fast loop's lock-free check.
	draining atomic.Bool
	fallDone chan struct{}

	// served counts the requests the fast loop answered itself.
	served prometheus.Counter
}

// Config configures a Server.
type Config struct {
	// Fallback serves every connection the fast loop does not; its Handler
	// is also the fast loop's handler, and its ReadHeaderTimeout (required)
	// and IdleTimeout (0: the header timeout) bound the fast loop's
	// connections too. Required.
	Fallback *http.Server
	// Paths are the request paths the fast loop answers: unary procedures,
	// whose answers it buffers whole. Requests to any other path go to the
	// fallback. Required.
	Paths []string
	// Logger receives the loop's failures; nil discards them.
	Logger *slog.Logger
	// MaxRequestBytes bounds the request messages the fast loop reads (an
	// envelope's prefix aside); larger ones go to the fallback, which
	// applies the service's limits.
	MaxRequestBytes int
	// Registerer takes the count of requests the fast loop answered
	// (MetricFastRequests), so operators and tests can tell which path
	// served the traffic; nil keeps it unregistered.
	Registerer prometheus.Registerer
	// TLS, when set, serves the port over TLS: connections that negotiate
	// HTTP/2 by ALPN go to the fallback, HTTP/1.1 ones are served here as
	// cleartext ones are. Its NextProtos should offer "h2" and "http/1.1".
	TLS *tls.Config
	// ReadBodyTimeout bounds reading a request body once its head is in.
	// Required: the handler behind the fallback bounds bodies on its side,
	// and only the caller knows that bound.
	ReadBodyTimeout time.Duration
}

// MetricFastRequests names the counter of requests the fast loop answered
// itself rather than handing them to net/http.
const MetricFastRequests = "yorkie_rpc_http1_fast_requests_total"

// envelopePrefix is the framing gRPC-web puts before a message; a body may
// be this much longer than MaxRequestBytes.
const envelopePrefix = 5

// Errors of New.
var (
	// ErrNoFallback: Config.Fallback or its Handler is missing.
	ErrNoFallback = errors.New("http1: Config.Fallback with a Handler is required")
	// ErrNoTimeout: the fallback's ReadHeaderTimeout or
	// Config.ReadBodyTimeout is not positive, which would let a slow client
	// hold a connection for ever.
	ErrNoTimeout = errors.New("http1: Fallback.ReadHeaderTimeout and Config.ReadBodyTimeout must be positive")
	// ErrNoPaths: Config.Paths is empty, so the loop would serve nothing.
	ErrNoPaths = errors.New("http1: Config.Paths is required")
)

// fastBufferSize is a fast connection's read buffer; requests that do not fit
// go to the fallback.
const fastBufferSize = 16 << 10

// New returns a server that answers cfg.Paths itself and hands everything
// else to cfg.Fallback. It registers its metric on cfg.Registerer.
func New(cfg Config) (*Server, error) {
	switch {
	case cfg.Fallback == nil || cfg.Fallback.Handler == nil:
		return nil, ErrNoFallback
	case cfg.Fallback.ReadHeaderTimeout <= 0 || cfg.ReadBodyTimeout <= 0:
		return nil, ErrNoTimeout
	case len(cfg.Paths) == 0:
		return nil, ErrNoPaths
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	paths := make(map[string]bool, len(cfg.Paths))
	for _, p := range cfg.Paths {
		paths[p] = true
	}
	s := &Server{
		handler:           cfg.Fallback.Handler,
		fallback:          cfg.Fallback,
		logger:            logger,
		readHeaderTimeout: cfg.Fallback.ReadHeaderTimeout,
		idleTimeout:       cfg.Fallback.IdleTimeout,
		bodyTimeout:       cfg.ReadBodyTimeout,
		maxBody:           min(cfg.MaxRequestBytes+envelopePrefix, fastBufferSize),
		paths:             paths,
		headerNames:       commonHeaders(),
		contentTypes:      unaryContentTypes(),
		conns:             map[*fastConn]bool{},
		fallDone:          make(chan struct{}),
		tls:               cfg.TLS,
		served: prometheus.NewCounter(prometheus.CounterOpts{
			Name: MetricFastRequests,
			Help: "Requests answered by the RPC port's HTTP/1.1 fast loop rather than net/http.",
		}),
	}
	if s.idleTimeout <= 0 {
		s.idleTimeout = s.readHeaderTimeout
	}
	if cfg.TLS != nil {
		withTLS(cfg.Fallback)
		s.handler = cfg.Fallback.Handler
	}
	if cfg.Registerer != nil {
		if err := cfg.Registerer.Register(s.served); err != nil {
			return nil, fmt.Errorf("register http1 metrics: %w", err)
		}
	}
	return s, nil
}

// Serve accepts connections on ln until Shutdown or Close; it returns
// http.ErrServerClosed then.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return http.ErrServerClosed
	}
	s.ln = ln
	s.handoff = newHandoffListener(ln.Addr())
	s.mu.Unlock()
	go func() {
		defer close(s.fallDone)
		if err := s.fallback.Serve(s.handoff); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.logger.Error("rpc port fallback stopped serving", "error", err)
		}
	}()
	base := context.WithValue(context.Background(), http.ServerContextKey, s.fallback)
	var backoff time.Duration
	for {
		conn, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closing := s.closing
			s.mu.Unlock()
			if closing {
				return http.ErrServerClosed
			}
			if temporaryAcceptError(err) {
				// Out of descriptors, say: connections closing will free
				// some, so wait a little longer each time, as net/http does.
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.logger.Warn("rpc port accept failed; retrying", "error", err, "delay", backoff)
				time.Sleep(backoff)
				continue
			}
			_ = s.handoff.Close()
			return fmt.Errorf("accept: %w", err)
		}
		backoff = 0
		if s.tls != nil {
			conn = tls.Server(conn, s.tls) // the handshake runs on the connection's goroutine
		}
		fc := &fastConn{srv: s, conn: conn, remote: conn.RemoteAddr().String(), accepted: time.Now()}
		if !s.track(fc, true) {
			_ = conn.Close()
			continue
		}
		ctx := context.WithValue(base, http.LocalAddrContextKey, conn.LocalAddr())
		go fc.serve(ctx)
	}
}

// temporaryAcceptError reports whether an accept error can pass: the
// process or system out of descriptors or buffers, a connection aborted
// before it was accepted, or any error that says it is temporary.
func temporaryAcceptError(err error) bool {
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ECONNABORTED, syscall.ENOBUFS, syscall.ENOMEM} {
		if errors.Is(err, errno) {
			return true
		}
	}
	var te interface{ Temporary() bool }
	var ne net.Error
	return errors.As(err, &te) && te.Temporary() || errors.As(err, &ne) && ne.Timeout()
}

// track adds or removes a connection; adding fails once the server closes.
func (s *Server) track(fc *fastConn, add bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !add {
		delete(s.conns, fc)
		return true
	}
	if s.closing {
		return false
	}
	s.conns[fc] = false
	return true
}

// setActive marks a connection busy with a request or idle. It reports false
// when the server is closing and the connection should end instead.
func (s *Server) setActive(fc *fastConn, active bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.conns[fc] = active
	return true
}

// Shutdown stops accepting, closes idle connections, waits for requests in
// flight to finish (until ctx ends), then shuts the fallback down.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	s.draining.Store(true)
	var err error
	if s.ln != nil {
		err = s.ln.Close()
	}
	s.mu.Unlock()
	ticker := time.NewTicker(10 * time.Millisecond)
	defer ticker.Stop()
	for {
		if s.closeIdle() {
			break
		}
		select {
		case <-ctx.Done():
			s.closeAll()
			return errors.Join(err, ctx.Err(), s.fallback.Shutdown(ctx))
		case <-ticker.C:
		}
	}
	err = errors.Join(err, s.fallback.Shutdown(ctx))
	s.waitFallback()
	return err
}

// Close closes the listener and every connection at once.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closing = true
	s.draining.Store(true)
	var err error
	if s.ln != nil {
		err = s.ln.Close()
	}
	s.mu.Unlock()
	s.closeAll()
	err = errors.Join(err, s.fallback.Close())
	s.waitFallback()
	return err
}

func (s *Server) waitFallback() {
	s.mu.Lock()
	started := s.handoff != nil
	s.mu.Unlock()
	if started {
		<-s.fallDone
	}
}

// closeIdle closes the idle connections and reports whether none is left.
func (s *Server) closeIdle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for fc, active := range s.conns {
		if !active {
			_ = fc.conn.Close()
			delete(s.conns, fc)
		}
	}
	return len(s.conns) == 0
}

func (s *Server) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for fc := range s.conns {
		_ = fc.conn.Close()
		delete(s.conns, fc)
	}
}

// fastConn is one connection served by the fast loop.
type fastConn struct {
	srv    *Server
	conn   net.Conn
	remote string
	br     *bufio.Reader
	// accepted is when the connection came: its first request head must be
	// in within the header timeout from then, as with net/http.
	accepted time.Time
	out      []byte // answer buffer, reused
	wbody    []byte // answer body buffer, reused
	body     fastBody
	// tls is the connection's TLS state (nil in cleartext).
	tls *tls.ConnectionState
	// deadline is the read deadline set on conn; it is moved only when it
	// must move by more than a second, to spare the timer updates.
	deadline time.Time
}

// serve runs the connection's requests until it closes or is handed off.
func (fc *fastConn) serve(ctx context.Context) {
	handedOff := false
	defer func() {
		if p := recover(); p != nil && p != http.ErrAbortHandler {
			fc.srv.logger.Error("panic serving rpc connection", "remote", fc.remote, "panic", p)
		}
		fc.srv.track(fc, false)
		if !handedOff {
			_ = fc.conn.Close()
		}
	}()
	headBy := fc.accepted.Add(fc.srv.readHeaderTimeout)
	if tc, ok := fc.conn.(*tls.Conn); ok {
		if !fc.handshake(ctx, tc, headBy) {
			return
		}
		if fc.tls.NegotiatedProtocol == "h2" {
			// net/http serves HTTP/2 on the TLS connection itself.
			fc.srv.track(fc, false)
			_ = tc.SetReadDeadline(time.Time{})
			handedOff = fc.srv.handoff.deliver(tc)
			return
		}
	}
	fc.br = bufio.NewReaderSize(fc.conn, fastBufferSize)
	fc.setDeadline(headBy, true)
	for first := true; ; first = false {
		if !first {
			fc.setDeadline(time.Now().Add(fc.srv.idleTimeout), false)
		}
		if _, err := fc.br.Peek(1); err != nil {
			return // nothing came: close without a word, as net/http does
		}
		if !first {
			headBy = time.Now().Add(fc.srv.readHeaderTimeout)
		}
		if !fc.srv.setActive(fc, true) {
			return
		}
		req, size, next := fc.readRequest(headBy)
		switch next {
		case nextDrop:
			return // the client left or was too slow
		case nextHandOff:
			handedOff = fc.handOff()
			return
		}
		keep := fc.handle(ctx, req)
		if _, err := fc.br.Discard(size); err != nil || !keep {
			return
		}
		if !fc.srv.setActive(fc, false) {
			return
		}
	}
}

// isTimeout reports whether err is a read deadline passing.
func isTimeout(err error) bool {
	var te interface{ Timeout() bool }
	return errors.As(err, &te) && te.Timeout()
}

// setDeadline moves the read deadline to t; unless exact, a deadline within
// a second of the current one is left alone.
func (fc *fastConn) setDeadline(t time.Time, exact bool) {
	if !exact && !fc.deadline.IsZero() && t.Sub(fc.deadline).Abs() < time.Second {
		return
	}
	fc.deadline = t
	_ = fc.conn.SetReadDeadline(t)
}

// handOff gives the connection, with what was read of it, to the fallback.
func (fc *fastConn) handOff() bool {
	fc.srv.track(fc, false)
	buffered, _ := fc.br.Peek(fc.br.Buffered())
	_ = fc.conn.SetReadDeadline(time.Time{})
	rc := &replayConn{Conn: fc.conn, pending: bytes.Clone(buffered)}
	return fc.srv.handoff.deliver(rc)
}

// next says what becomes of a connection after reading a request head.
type next int

const (
	nextServe   next = iota // the fast loop serves the request
	nextHandOff             // the fallback takes the connection
	nextDrop                // the connection closes
)

// readRequest reads the next request whole, if the fast loop serves it; its
// head must be in by headBy and its body within the body timeout after.
func (fc *fastConn) readRequest(headBy time.Time) (*http.Request, int, next) {
	hdr, n := fc.header(headBy)
	if n != nextServe {
		return nil, 0, n
	}
	req, bodyLen, ok := fc.parse(hdr)
	if !ok {
		return nil, 0, nextHandOff
	}
	size := len(hdr) + bodyLen
	if size > fc.br.Size() {
		return nil, 0, nextHandOff
	}
	if fc.br.Buffered() < size {
		fc.setDeadline(time.Now().Add(fc.srv.bodyTimeout), true)
		if _, err := fc.br.Peek(size); err != nil {
			fc.timedOut(err)
			return nil, 0, nextDrop
		}
	}
	buf, _ := fc.br.Peek(size)
	fc.body.Reset(buf[len(hdr):])
	req.Body = &fc.body
	return req, size, nextServe
}

// header returns the request head, through the blank line.
func (fc *fastConn) header(headBy time.Time) ([]byte, next) {
	slow := false
	for {
		buf, _ := fc.br.Peek(fc.br.Buffered())
		if bytes.HasPrefix(buf, []byte("PRI ")) {
			return nil, nextHandOff // HTTP/2 with prior knowledge
		}
		if i := bytes.Index(buf, []byte("\r\n\r\n")); i >= 0 {
			if bytes.Contains(buf[:i], []byte("\n\n")) {
				return nil, nextHandOff
			}
			return buf[:i+4], nextServe
		}
		if bytes.Contains(buf, []byte("\n\n")) || len(buf) >= fc.br.Size() {
			return nil, nextHandOff
		}
		if !slow {
			// The head came in pieces: the header timeout bounds the rest.
			slow = true
			fc.setDeadline(headBy, true)
		}
		if _, err := fc.br.Peek(len(buf) + 1); err != nil {
			fc.timedOut(err)
			return nil, nextDrop
		}
	}
}

// requestTimeout is the answer to a request that came too slowly, as
// net/http words its own errors.
const requestTimeout = "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n" +
	"Content-Type: text/plain; charset=utf-8\r\nContent-Length: 19\r\n\r\n408 Request Timeout"

// timedOut answers 408 when a request began but its head or body did not
// come in time; the connection then closes. Nothing was sent on the
// connection since the last answer, so the client can tell what happened.
func (fc *fastConn) timedOut(err error) {
	if !isTimeout(err) {
		return
	}
	_ = fc.conn.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = io.WriteString(fc.conn, requestTimeout)
}

// commonHeaders maps the header names clients commonly send, in any case,
// to their canonical form, which saves allocating one per request.
func commonHeaders() map[string]string {
	m := map[string]string{}
	for _, k := range []string{
		"Accept", "Accept-Encoding", "Accept-Language", "Authorization", "Connect-Protocol-Version",
		"Connect-Timeout-Ms", "Connection", "Content-Encoding", "Content-Length", "Content-Type",
		"Host", "Origin", "Referer", "Sec-Fetch-Mode", "Sec-Fetch-Site", "Sec-Fetch-Dest",
		"User-Agent", "X-Yorkie-User-Agent", "X-Shard-Key", "X-Session-Key", "X-Api-Key",
		"X-Grpc-Web", "X-User-Agent", "Grpc-Timeout", "Priority", "Cookie",
	} {
		m[k] = k
		m[string(bytes.ToLower([]byte(k)))] = k
	}
	return m
}

// unaryContentTypes are the unary content types the fast loop serves.
func unaryContentTypes() map[string]bool {
	return map[string]bool{
		"application/json": true, "application/json; charset=utf-8": true, "application/proto": true,
		"application/grpc-web": true, "application/grpc-web+proto": true, "application/grpc-web+json": true,
	}
}

// parse reads a request head the fast loop serves: a POST to a unary
// procedure, HTTP/1.1, with a Content-Length body and only plain headers.
// Anything else (ok false) goes to the fallback, which answers it as
// net/http does, errors included.
func (fc *fastConn) parse(hdr []byte) (*http.Request, int, bool) {
	// One string holds the whole head; names and values are slices of it.
	hs := string(hdr)
	line, rest, _ := strings.Cut(hs, "\r\n")
	method, line, ok1 := strings.Cut(line, " ")
	uri, proto, ok2 := strings.Cut(line, " ")
	if !ok1 || !ok2 || method != http.MethodPost || proto != "HTTP/1.1" || !fc.srv.paths[uri] {
		return nil, 0, false
	}
	lines := strings.Count(rest, "\r\n")
	h := make(http.Header, lines)
	values := make([]string, 0, lines)
	var host string
	hosts, lengths := 0, 0
	bodyLen := -1
	contentType := false
	for len(rest) > 2 {
		var kv string
		kv, rest, _ = strings.Cut(rest, "\r\n")
		k, v, ok := strings.Cut(kv, ":")
		if !ok || !validHeaderName(k) {
			return nil, 0, false
		}
		v = strings.Trim(v, " \t")
		if !validHeaderValue(v) {
			return nil, 0, false
		}
		key, known := fc.srv.headerNames[k]
		if !known {
			key = textproto.CanonicalMIMEHeaderKey(k)
		}
		switch key {
		case "Host":
			hosts++
			host = v
			continue
		case "Content-Length":
			lengths++
			n, err := strconv.ParseUint(v, 10, 31)
			if err != nil || len(v) == 0 || v[0] == '+' {
				return nil, 0, false
			}
			bodyLen = int(n)
		case "Connection":
			if !strings.EqualFold(v, "keep-alive") {
				return nil, 0, false
			}
		case "Content-Type":
			contentType = fc.srv.contentTypes[v]
			if !contentType {
				return nil, 0, false
			}
		case "Transfer-Encoding", "Expect", "Upgrade", "Trailer", "Te", "Pragma", "Http2-Settings":
			return nil, 0, false
		}
		if prev, ok := h[key]; ok {
			h[key] = append(prev, v)
			continue
		}
		values = append(values, v)
		h[key] = values[len(values)-1 : len(values) : len(values)]
	}
	if hosts != 1 || !validHost(host) || lengths != 1 || bodyLen < 0 || bodyLen > fc.srv.maxBody || !contentType {
		return nil, 0, false
	}
	path := uri
	req := &http.Request{
		Method:        http.MethodPost,
		URL:           &url.URL{Path: path},
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		ContentLength: int64(bodyLen),
		Host:          host,
		RemoteAddr:    fc.remote,
		RequestURI:    path,
		TLS:           fc.tls,
	}
	return req, bodyLen, true
}

// validHeaderName reports whether k is an HTTP token.
func validHeaderName(k string) bool {
	if len(k) == 0 {
		return false
	}
	for i := range len(k) {
		if !isTokenChar(k[i]) {
			return false
		}
	}
	return true
}

func isTokenChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// validHeaderValue accepts printable ASCII, tabs and spaces; anything else
// is left to net/http's rules.
func validHeaderValue(v string) bool {
	for i := range len(v) {
		c := v[i]
		if (c < ' ' && c != '\t') || c >= 0x7f {
			return false
		}
	}
	return true
}

// validHost accepts a plain host[:port]; anything else is left to net/http.
func validHost(h string) bool {
	if h == "" {
		return false
	}
	for i := range len(h) {
		c := h[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == ':' || c == '[' || c == ']') {
			return false
		}
	}
	return true
}

// handle runs the handler and writes its answer; it reports whether the
// connection stays open.
func (fc *fastConn) handle(ctx context.Context, req *http.Request) bool {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req = req.WithContext(ctx)
	w := &fastWriter{header: make(http.Header, 4), out: fc.out[:0], body: fc.wbody[:0]}
	fc.srv.handler.ServeHTTP(w, req)
	if fc.srv.draining.Load() {
		// As net/http does while shutting down: the client must not send
		// another request on this connection.
		w.header.Set("Connection", "close")
	}
	keep := w.finish()
	fc.srv.served.Inc()
	_, err := fc.conn.Write(w.out)
	// Keep ordinary buffers for the next answer; let big ones go.
	if cap(w.out) <= 64<<10 && cap(w.body) <= 64<<10 {
		fc.out, fc.wbody = w.out[:0], w.body[:0]
	}
	return err == nil && keep
}

// fastBody is a request body already read whole. Handlers that buffer
// bodies take its bytes as they are (Bytes) and may replace them, once
// decompressed say (Reset), instead of copying them again.
type fastBody struct {
	bytes.Reader
	data []byte
}

// Bytes returns the whole body, whatever was read of it.
func (b *fastBody) Bytes() []byte { return b.data }

// Reset makes b read data.
func (b *fastBody) Reset(data []byte) {
	b.data = data
	b.Reader.Reset(data)
}

// Close does nothing: the body is in the connection's buffer.
func (*fastBody) Close() error { return nil }

// fastWriter buffers a whole answer and frames it with a Content-Length.
type fastWriter struct {
	header      http.Header
	status      int
	wroteHeader bool
	out         []byte
	body        []byte
}

func (w *fastWriter) Header() http.Header { return w.header }

func (w *fastWriter) WriteHeader(code int) {
	if w.wroteHeader || code < 200 {
		return // informational answers are not sent; the final one is
	}
	w.wroteHeader = true
	w.status = code
}

func (w *fastWriter) Write(p []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !bodyAllowed(w.status) {
		return 0, http.ErrBodyNotAllowed
	}
	w.body = append(w.body, p...)
	return len(p), nil
}

// Flush is a no-op: the answer goes out whole when the handler returns.
func (w *fastWriter) Flush() {}

func bodyAllowed(status int) bool {
	return status != http.StatusNoContent && status != http.StatusNotModified
}

// finish writes the head and body to out and reports whether the
// connection may carry another request.
func (w *fastWriter) finish() bool {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	out := w.out
	out = append(out, "HTTP/1.1 "...)
	out = strconv.AppendInt(out, int64(w.status), 10)
	out = append(out, ' ')
	out = append(out, http.StatusText(w.status)...)
	out = append(out, "\r\n"...)
	keep := true
	w.header.Del("Content-Length")
	w.header.Del("Transfer-Encoding")
	if len(w.body) > 0 && w.header.Get("Content-Type") == "" {
		w.header.Set("Content-Type", http.DetectContentType(w.body))
	}
	for k, vs := range w.header {
		if !validHeaderName(k) {
			continue
		}
		if k == "Connection" {
			for _, v := range vs {
				if bytes.EqualFold([]byte(textproto.TrimString(v)), []byte("close")) {
					keep = false
				}
			}
		}
		for _, v := range vs {
			out = append(out, k...)
			out = append(out, ": "...)
			for i := range len(v) {
				c := v[i]
				if c == '\r' || c == '\n' {
					c = ' '
				}
				out = append(out, c)
			}
			out = append(out, "\r\n"...)
		}
	}
	if _, ok := w.header["Date"]; !ok {
		out = append(out, "Date: "...)
		out = time.Now().UTC().AppendFormat(out, http.TimeFormat)
		out = append(out, "\r\n"...)
	}
	if bodyAllowed(w.status) {
		out = append(out, "Content-Length: "...)
		out = strconv.AppendInt(out, int64(len(w.body)), 10)
		out = append(out, "\r\n"...)
	}
	out = append(out, "\r\n"...)
	out = append(out, w.body...)
	w.out = out
	return keep
}

// replayConn is a connection handed to the fallback with the bytes the fast
// loop already read from it.
type replayConn struct {
	net.Conn
	pending []byte
}

// NetConn returns the connection underneath, as tls.Conn's method does.
func (c *replayConn) NetConn() net.Conn { return c.Conn }

func (c *replayConn) Read(p []byte) (int, error) {
	if len(c.pending) > 0 {
		n := copy(p, c.pending)
		c.pending = c.pending[n:]
		if len(c.pending) == 0 {
			// A connection that outlives its request (a detached stream)
			// must not keep the replayed bytes.
			c.pending = nil
		}
		return n, nil
	}
	return c.Conn.Read(p)
}

// handoffListener passes handed-off connections to the fallback's Serve.
type handoffListener struct {
	addr   net.Addr
	conns  chan net.Conn
	done   chan struct{}
	closed sync.Once
}

func newHandoffListener(addr net.Addr) *handoffListener {
	return &handoffListener{addr: addr, conns: make(chan net.Conn), done: make(chan struct{})}
}

// deliver passes c on, or reports false once the listener is closed.
func (l *handoffListener) deliver(c net.Conn) bool {
	select {
	case l.conns <- c:
		return true
	case <-l.done:
		return false
	}
}

func (l *handoffListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *handoffListener) Close() error {
	l.closed.Do(func() { close(l.done) })
	return nil
}

func (l *handoffListener) Addr() net.Addr { return l.addr }
