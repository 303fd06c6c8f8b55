// Package streamconn serves the long, mostly idle part of a Connect server
// stream over HTTP/1.1 on the stream's connection itself, away from
// net/http.
//
// net/http runs a handler on its connection's goroutine. A Watch handler
// parks there for the stream's whole life, deep in net/http, connect and the
// interceptors, so the runtime never shrinks that goroutine's stack, and the
// connection keeps its read and write buffers and a background reader. A
// handler that has set its stream up can instead Detach it: the connection
// is taken from net/http (which flushes nothing, as nothing was written
// yet), the handler returns, and the rest of the stream runs in steps, on
// a goroutine only while the stream has something to do (its set-up, an
// event, its end): an idle stream holds none. A goroutine that ran a step
// waits a little for another stream's before it exits, so a burst of events
// reuses a few goroutines instead of starting one per delivery. Each message goes out as a chunk of the Connect streaming
// response, and the end-stream message when the stream ends. One goroutine
// for all streams notices clients hanging up (epoll, on Linux); elsewhere,
// or over TLS, a small goroutine per stream reads the connection to notice
// it. Streams that cannot be detached (HTTP/2, gRPC, gRPC-web, an
// encoding this package does not write) are served by connect as before.
package streamconn

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// DefaultWriteTimeout bounds writing one message of a detached stream when
// Config.WriteTimeout is zero: a client that reads nothing for this long is
// gone, and its stream ends.
const DefaultWriteTimeout = 30 * time.Second

// stepperIdle is how long a goroutine that ran a step waits for the next
// before it exits.
const stepperIdle = 5 * time.Second

// contentTypePrefix is the content type of Connect streams, before the codec.
const contentTypePrefix = "application/connect+"

// Config configures a Server.
type Config struct {
	// Paths are the request paths of the server-streaming procedures whose
	// streams may be detached. Required.
	Paths []string
	// Codecs write the messages of the codecs they name (the content
	// subtype: "json" for application/connect+json), as the connect handler
	// was given them. Binary protobuf ("proto") is always written; streams
	// of any other codec stay with connect.
	Codecs []connect.Codec
	// WriteTimeout bounds writing one message; 0 means DefaultWriteTimeout.
	WriteTimeout time.Duration
	// Logger receives the failures of detached streams; nil discards them.
	Logger *slog.Logger
}

// ErrNoPaths is New's answer to a Config without Paths.
var ErrNoPaths = errors.New("streamconn: Config.Paths is required")

// Server detaches the streams of the handler it wraps and keeps count of
// them until they end.
type Server struct {
	paths        map[string]bool
	codecs       map[string]connect.Codec
	writeTimeout time.Duration
	logger       *slog.Logger

	wg      sync.WaitGroup
	mu      sync.Mutex
	live    map[*Stream]struct{}
	hangups *hangups
	// steps hands a woken stream to a goroutine waiting for one, if any.
	steps chan *Stream
}

// New returns a Server for cfg.
func New(cfg Config) (*Server, error) {
	if len(cfg.Paths) == 0 {
		return nil, ErrNoPaths
	}
	s := &Server{
		paths:        make(map[string]bool, len(cfg.Paths)),
		codecs:       map[string]connect.Codec{"proto": protoCodec{}},
		writeTimeout: cfg.WriteTimeout,
		logger:       cfg.Logger,
		live:         map[*Stream]struct{}{},
		hangups:      newHangups(),
		steps:        make(chan *Stream),
	}
	if s.writeTimeout <= 0 {
		s.writeTimeout = DefaultWriteTimeout
	}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	for _, p := range cfg.Paths {
		s.paths[p] = true
	}
	for _, c := range cfg.Codecs {
		s.codecs[c.Name()] = c
	}
	return s, nil
}

// Wrap returns next with the streams it serves detachable: a Connect stream
// request over HTTP/1.1 to one of the paths, in a codec the server writes,
// gets a Stream in its context (FromContext).
func (s *Server) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st := s.stream(w, r)
		if st == nil {
			next.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(&writer{ResponseWriter: w, st: st}, r.WithContext(context.WithValue(r.Context(), streamKey{}, st)))
	})
}

// stream returns the Stream for a detachable request, or nil.
func (s *Server) stream(w http.ResponseWriter, r *http.Request) *Stream {
	if r.ProtoMajor != 1 || r.Method != http.MethodPost || !s.paths[r.URL.Path] {
		return nil
	}
	ct := r.Header.Get("Content-Type")
	name, ok := strings.CutPrefix(ct, contentTypePrefix)
	if !ok {
		return nil
	}
	codec, ok := s.codecs[name]
	if !ok {
		return nil
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		return nil
	}
	return &Stream{srv: s, hijacker: hj, header: w.Header(), codec: codec, contentType: ct}
}

// Wait waits until every detached stream has ended, or ctx ends.
func (s *Server) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		s.hangups.close()
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close ends the detached streams at once: their connections close and
// their contexts end.
func (s *Server) Close() {
	s.hangups.close()
	s.mu.Lock()
	defer s.mu.Unlock()
	for st := range s.live {
		_ = st.conn.Close()
		st.hangUp()
	}
}

func (s *Server) track(st *Stream, add bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if add {
		s.live[st] = struct{}{}
	} else {
		delete(s.live, st)
	}
}

type streamKey struct{}

// FromContext returns the detachable stream a request's context carries, or
// nil.
func FromContext(ctx context.Context) *Stream {
	st, _ := ctx.Value(streamKey{}).(*Stream)
	return st
}

// Stream is one detachable server stream.
type Stream struct {
	srv         *Server
	hijacker    http.Hijacker
	header      http.Header
	codec       connect.Codec
	contentType string

	// Set by the handler's goroutine before the stream is detached.
	wrote     bool // something went out through net/http: too late to detach
	detached  bool
	firstSent []func()

	// The detached stream's goroutine and interceptors finishing after the
	// handler returned meet here.
	mu    sync.Mutex
	ended bool
	err   error
	onEnd []func(context.Context, error)

	ctx     context.Context // the detached stream's, as Detach got it
	cancel  context.CancelFunc
	conn    net.Conn
	unwatch func() // ends the watch for the client hanging up, if shared
	started bool   // the response head was written

	// Stepping: step runs on one goroutine at a time, started by wake when
	// none runs (wakes counts the wakes not yet served); over is set, by
	// that goroutine, once step reported the stream done.
	step    Step
	stepCtx context.Context // ctx, ended when the client leaves
	wakes   atomic.Int32
	over    bool
}

// BeforeFirstMessage has f called just before a detached stream sends its
// first message. It must be called before the handler detaches the stream
// (an interceptor calls it before the handler runs); f is not called for
// a stream that stays with connect.
func BeforeFirstMessage(ctx context.Context, f func()) {
	if st := FromContext(ctx); st != nil && !st.detached {
		st.firstSent = append(st.firstSent, f)
	}
}

// Finish hands a stream's end to done: at once with ctx and err for a
// stream that stays with connect, or, for a detached one, with the detached
// stream's context and the error it ends with, when it ends. It returns what
// the handler's caller should see: err, or nil for a detached stream
// (connect's own end of it goes nowhere). done outlives the call, so it
// must not hold the call's context or connect's conn: they hold the
// connection's buffers.
func Finish(ctx context.Context, err error, done func(ctx context.Context, err error)) error {
	st := FromContext(ctx)
	if st == nil || !st.detached {
		done(ctx, err)
		return err
	}
	st.mu.Lock()
	if !st.ended {
		st.onEnd = append(st.onEnd, done)
		st.mu.Unlock()
		return nil
	}
	endErr := st.err
	st.mu.Unlock()
	done(st.ctx, endErr)
	return nil
}

// Step does what a detached stream has to do now and returns, reporting
// done with the error the stream ends with (in Connect's end-stream
// message) once the stream is over. The stream calls it when it is detached,
// and again after every call of wake and when ctx ends (the client left), on
// a goroutine that exists only while a step runs: an idle stream holds none.
// Steps never run at once; a wake during a step runs another step after it.
// A step should not wait for what wake announces: whatever waits
// (a relay, a slow client's write) keeps the goroutine meanwhile. header is
// the stream's response header, which goes out with the first message, and
// nil once it has; send writes one message.
type Step func(ctx context.Context, header http.Header, send func(any) error, wake func()) (done bool, err error)

// Detach takes the stream's connection from net/http and has step serve the
// rest of the stream, with a context derived from ctx that ends when the
// client leaves. ctx must carry only what the stream needs, not the call's
// context: connect's call info in it holds the request and net/http's
// connection with its buffers, for as long as the stream lasts. Detach reports false, having
// changed nothing, when the stream cannot be detached (a message already
// went out, or net/http refuses the connection): the caller then serves
// the stream itself. The handler must return once Detach reported true.
func (st *Stream) Detach(ctx context.Context, step Step) bool {
	if st.wrote || st.detached {
		return false
	}
	conn, _, err := st.hijacker.Hijack()
	if err != nil {
		return false
	}
	// Whatever the client sent after its request is not for this stream;
	// net/http's buffers and response go with its hold on the connection.
	st.hijacker = nil
	// A body read deadline may still be on the connection; from here on
	// reading only watches for the client leaving.
	_ = conn.SetReadDeadline(time.Time{})
	st.conn = conn
	// connect may still touch net/http's header map as the handler returns;
	// the stream keeps its own copy of what its head writes.
	st.header = headCopy(st.header)
	st.detached = true
	st.ctx = ctx
	st.stepCtx, st.cancel = context.WithCancel(ctx)
	st.step = step
	st.srv.wg.Add(1)
	st.srv.track(st, true)
	if unwatch, ok := st.srv.hangups.watch(conn, st.hangUp); ok {
		st.unwatch = unwatch
	} else {
		go watchClose(conn, st.hangUp)
	}
	st.wake()
	return true
}

// hangUp ends the stream's context, as its client left, and wakes the
// stream to end it.
func (st *Stream) hangUp() {
	st.cancel()
	st.wake()
}

// watchClose reads the connection until it fails (the client closed it, or
// the stream's end closed it) and then hangs the stream up.
func watchClose(conn net.Conn, hangUp func()) {
	var b [16]byte
	for {
		if _, err := conn.Read(b[:]); err != nil {
			hangUp()
			return
		}
	}
}

// wake has the stream step: on a waiting or new goroutine if no step runs,
// or after the running one.
func (st *Stream) wake() {
	if st.wakes.Add(1) == 1 {
		select {
		case st.srv.steps <- st:
		default:
			go st.srv.stepper(st)
		}
	}
}

// stepper runs st, then the streams woken after it, until none came for
// stepperIdle.
func (s *Server) stepper(st *Stream) {
	idle := time.NewTimer(stepperIdle)
	defer idle.Stop()
	for {
		st.run()
		idle.Reset(stepperIdle)
		select {
		case st = <-s.steps:
		case <-idle.C:
			return
		}
	}
}

// run steps the stream until every wake so far is served.
func (st *Stream) run() {
	for {
		n := st.wakes.Load()
		if !st.over {
			if done, err := st.step(st.stepCtx, st.header, st.send, st.wake); done {
				st.over = true
				st.end(err)
			}
		}
		if st.wakes.Add(-n) == 0 {
			return
		}
	}
}

// end ends the stream with err: writes the end-stream message unless the
// client left, closes the connection and tells those waiting for the end.
func (st *Stream) end(err error) {
	defer st.srv.wg.Done()
	if st.stepCtx.Err() == nil {
		if werr := st.writeEnd(err); werr != nil {
			st.srv.logger.Debug("detached stream's end not written", "error", werr)
		}
	}
	st.cancel()
	if st.unwatch != nil {
		st.unwatch()
	}
	_ = st.conn.Close()
	st.srv.track(st, false)
	st.step = nil
	st.mu.Lock()
	st.ended, st.err = true, err
	onEnd := st.onEnd
	st.onEnd = nil
	st.mu.Unlock()
	for _, f := range onEnd {
		f(st.ctx, err)
	}
}

// send writes one message.
func (st *Stream) send(msg any) error {
	for _, f := range st.firstSent {
		f()
	}
	st.firstSent = nil
	data, err := st.codec.Marshal(msg)
	if err != nil {
		return connect.NewError(connect.CodeInternal, err)
	}
	return st.writeEnvelope(0, data)
}

// flagEndStream marks Connect's end-stream message.
const flagEndStream = 0b10

// writeEnvelope writes one enveloped message as one chunk, after the
// response head if it is the first.
func (st *Stream) writeEnvelope(flags byte, data []byte) error {
	// No buffer is kept between messages: an idle stream holds none.
	var out []byte
	if !st.started {
		out = st.appendHead(out)
	}
	size := 5 + len(data)
	out = strconv.AppendInt(out, int64(size), 16)
	out = append(out, "\r\n"...)
	out = append(out, flags)
	out = binary.BigEndian.AppendUint32(out, uint32(len(data)))
	out = append(out, data...)
	out = append(out, "\r\n"...)
	if flags&flagEndStream != 0 {
		out = append(out, "0\r\n\r\n"...)
	}
	_ = st.conn.SetWriteDeadline(time.Now().Add(st.srv.writeTimeout))
	_, err := st.conn.Write(out)
	if err != nil {
		return connect.NewError(connect.CodeUnavailable, err)
	}
	return nil
}

// skippedHeaders are the handler's response headers the head does not
// copy: framing is this package's, and messages go uncompressed.
var skippedHeaders = map[string]bool{
	"Content-Length": true, "Transfer-Encoding": true, "Connection": true,
	"Connect-Content-Encoding": true, "Content-Type": true, "Date": true,
}

// headCopy copies the headers of h that the response head writes.
func headCopy(h http.Header) http.Header {
	out := make(http.Header, len(h))
	for k, vs := range h {
		if !skippedHeaders[k] {
			out[k] = append([]string(nil), vs...)
		}
	}
	return out
}

// appendHead appends the response head: the handler's headers, chunked
// framing, and Connection: close, as the connection ends with the stream.
func (st *Stream) appendHead(out []byte) []byte {
	st.started = true
	out = append(out, "HTTP/1.1 200 OK\r\nContent-Type: "...)
	out = append(out, st.contentType...)
	out = append(out, "\r\nTransfer-Encoding: chunked\r\nConnection: close\r\nDate: "...)
	out = time.Now().UTC().AppendFormat(out, http.TimeFormat)
	out = append(out, "\r\n"...)
	for k, vs := range st.header {
		if skippedHeaders[k] || !validName(k) {
			continue
		}
		for _, v := range vs {
			out = append(out, k...)
			out = append(out, ": "...)
			out = appendValue(out, v)
			out = append(out, "\r\n"...)
		}
	}
	// Written: the stream keeps no header map for the rest of its life.
	st.header = nil
	return append(out, "\r\n"...)
}

func validName(k string) bool {
	if k == "" {
		return false
	}
	for i := range len(k) {
		c := k[i]
		if c <= ' ' || c >= 0x7f || c == ':' {
			return false
		}
	}
	return true
}

// appendValue appends a header value with line breaks blanked out.
func appendValue(out []byte, v string) []byte {
	for i := range len(v) {
		c := v[i]
		if c == '\r' || c == '\n' {
			c = ' '
		}
		out = append(out, c)
	}
	return out
}

// writeEnd writes the end-stream message for err (nil: a clean end).
func (st *Stream) writeEnd(err error) error {
	data, merr := json.Marshal(endStream(err))
	if merr != nil {
		return merr
	}
	return st.writeEnvelope(flagEndStream, data)
}

// endStreamMessage is Connect's end-stream message.
type endStreamMessage struct {
	Error    *wireError          `json:"error,omitempty"`
	Metadata map[string][]string `json:"metadata,omitempty"`
}

type wireError struct {
	Code    string       `json:"code"`
	Message string       `json:"message,omitempty"`
	Details []wireDetail `json:"details,omitempty"`
}

type wireDetail struct {
	Type  string          `json:"type"`
	Value string          `json:"value"`
	Debug json.RawMessage `json:"debug,omitempty"`
}

// endStream builds the end-stream message for err, as connect does: the
// error's code, message and details, and its metadata.
func endStream(err error) endStreamMessage {
	if err == nil {
		return endStreamMessage{}
	}
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return endStreamMessage{Error: &wireError{Code: connect.CodeUnknown.String(), Message: err.Error()}}
	}
	we := &wireError{Code: ce.Code().String(), Message: ce.Message()}
	for _, d := range ce.Details() {
		wd := wireDetail{Type: d.Type(), Value: base64.RawStdEncoding.EncodeToString(d.Bytes())}
		if v, verr := d.Value(); verr == nil {
			if debug, jerr := protojson.Marshal(v); jerr == nil {
				wd.Debug = debug
			}
		}
		we.Details = append(we.Details, wd)
	}
	end := endStreamMessage{Error: we}
	for k, vs := range ce.Meta() {
		if skippedHeaders[k] {
			continue
		}
		if end.Metadata == nil {
			end.Metadata = map[string][]string{}
		}
		end.Metadata[k] = append(end.Metadata[k], vs...)
	}
	return end
}

// writer is the ResponseWriter connect gets for a detachable stream: it
// notes whether anything went out, and once the stream is detached it
// swallows connect's own end of the call.
type writer struct {
	http.ResponseWriter
	st *Stream
}

func (w *writer) WriteHeader(code int) {
	if w.st.detached {
		return
	}
	w.st.wrote = true
	w.ResponseWriter.WriteHeader(code)
}

func (w *writer) Write(p []byte) (int, error) {
	if w.st.detached {
		return len(p), nil
	}
	w.st.wrote = true
	return w.ResponseWriter.Write(p)
}

func (w *writer) Flush() {
	if w.st.detached {
		return
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach net/http's writer.
func (w *writer) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// protoCodec writes binary protobuf.
type protoCodec struct{}

func (protoCodec) Name() string { return "proto" }

func (protoCodec) Marshal(msg any) ([]byte, error) {
	m, ok := msg.(proto.Message)
	if !ok {
		return nil, errors.New("streamconn: message is not a protobuf message")
	}
	return proto.Marshal(m)
}

func (protoCodec) Unmarshal(data []byte, msg any) error {
	m, ok := msg.(proto.Message)
	if !ok {
		return errors.New("streamconn: message is not a protobuf message")
	}
	return proto.Unmarshal(data, m)
}
