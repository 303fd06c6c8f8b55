// Package bounds bounds HTTP requests before any handler sees them: each
// body is read whole within a timeout and decompressed (gzip) within the
// byte bound of its path, and the bytes all requests hold at once are
// bounded together. The RPC port and the profiling port serve behind it.
package bounds

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"

	"github.com/yorkie-affinity/yorkie/server/rpc/errinfo"
)

// Defaults of the request bounds.
const (
	// DefaultReadHeaderTimeout bounds the arrival of a request head, as
	// net/http's ReadHeaderTimeout does.
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultReadBodyTimeout bounds how long a client may take to send a
	// request body.
	DefaultReadBodyTimeout = 30 * time.Second
	// DefaultSmallRequestBytes bounds the requests of the endpoints whose
	// messages are tiny: health checks and the profiling port.
	DefaultSmallRequestBytes = 64 << 10
	// DefaultMaxInflightBytes bounds the request bytes a node holds at once,
	// read and decompressed, over all requests: each is bounded on its own,
	// and this bounds their sum (gzip makes a small request large).
	DefaultMaxInflightBytes = 256 << 20
)

// envelopePrefix is the framing the gRPC, gRPC-web and Connect streaming
// protocols put before a message; it does not count against the limit.
const envelopePrefix = 5

// flagCompressed marks a compressed message in an envelope.
const flagCompressed = 1

var (
	// errRequestTooLarge is the cause of a rejected oversized request.
	errRequestTooLarge = errors.New("request is too large")
	// errBodyTimeout is the cause of a request whose body came too slowly.
	errBodyTimeout = errors.New("request body not received in time")
	// errBusy is the cause of a request refused because the node holds too
	// many request bytes already.
	errBusy = errors.New("the server holds too many request bytes at once; try again")
)

// Config says what a request may send before any handler sees it.
type Config struct {
	// MaxBytes bounds the decompressed body of requests no rule matches
	// (0: DefaultSmallRequestBytes).
	MaxBytes int
	// Rules override MaxBytes by path prefix; the first match wins.
	Rules []Rule
	// ReadBodyTimeout bounds reading a body (0: DefaultReadBodyTimeout).
	ReadBodyTimeout time.Duration
	// MaxInflightBytes bounds the sum of the bodies, read and decompressed,
	// of the requests being served (0: DefaultMaxInflightBytes; negative: no
	// bound). A request that would take it past the bound is refused with
	// unavailable (ErrUnavailable), which clients retry.
	MaxInflightBytes int64
}

// byteBudget counts bytes held against a bound shared by all requests.
type byteBudget struct {
	mu   sync.Mutex
	used int64
	max  int64 // negative: no bound
}

// take holds n more bytes, or reports false when that would pass the bound.
func (b *byteBudget) take(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.max >= 0 && b.used+n > b.max {
		return false
	}
	b.used += n
	return true
}

func (b *byteBudget) give(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
}

// holding is what one request holds of a byteBudget.
type holding struct {
	budget *byteBudget
	held   int64
}

// grow holds n more bytes for the request, or fails with errBusy.
func (h *holding) grow(n int) error {
	if !h.budget.take(int64(n)) {
		return errBusy
	}
	h.held += int64(n)
	return nil
}

// release gives back everything the request held.
func (h *holding) release() { h.budget.give(h.held) }

// Rule bounds the requests under one path prefix.
type Rule struct {
	// Prefix selects the requests by URL path.
	Prefix string
	// MaxBytes bounds a decompressed request message, envelope excluded.
	MaxBytes int
	// Admit, when set, decides from the headers alone whether the request
	// may send its body at all; its error is the answer.
	Admit func(http.Header) *connect.Error
}

// New returns next behind the bounds of cfg: it reads every request body
// whole, within the read timeout, and decompresses it within the byte bound
// of its path before next runs, so no handler, codec or decompressor ever holds more than the bound or
// waits on a slow client. Handlers get the body uncompressed, its encoding
// headers removed.
//
// A request over its bound gets code invalid_argument with the ErrorInfo
// code ErrRequestTooLarge: resending it cannot help, so clients must not
// retry it (the JS SDK retries resource_exhausted for ever). A body that
// does not arrive in time is answered 408 over HTTP/1.x, as a slow header
// is, and the connection closes.
func New(next http.Handler, cfg Config) http.Handler {
	b := cfg
	if b.MaxBytes <= 0 {
		b.MaxBytes = DefaultSmallRequestBytes
	}
	if b.ReadBodyTimeout <= 0 {
		b.ReadBodyTimeout = DefaultReadBodyTimeout
	}
	if b.MaxInflightBytes == 0 {
		b.MaxInflightBytes = DefaultMaxInflightBytes
	}
	budget := &byteBudget{max: b.MaxInflightBytes}
	errWriter := connect.NewErrorWriter()
	refuse := func(w http.ResponseWriter, r *http.Request, err *connect.Error) {
		if r.ProtoMajor == 1 {
			// The body is not read to its end: the connection cannot carry
			// another request, and net/http must not drain it.
			w.Header().Set("Connection", "close")
		}
		_ = errWriter.Write(w, r, err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rule := Rule{MaxBytes: b.MaxBytes}
		for _, rl := range b.Rules {
			if strings.HasPrefix(r.URL.Path, rl.Prefix) {
				rule = rl
				break
			}
		}
		if rule.Admit != nil {
			if err := rule.Admit(r.Header); err != nil {
				refuse(w, r, err)
				return
			}
		}
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			next.ServeHTTP(w, r)
			return
		}
		// Framing and gzip's own headers may add a little to a message at
		// its limit.
		wireLimit := int64(rule.MaxBytes) + envelopePrefix + 1<<10
		if r.ContentLength > wireLimit {
			refuse(w, r, tooLarge(fmt.Sprintf("a body of %d bytes", r.ContentLength), rule.MaxBytes))
			return
		}
		hold := &holding{budget: budget}
		defer hold.release()
		body, err := readBody(w, r, wireLimit, b.ReadBodyTimeout, hold)
		switch {
		case errors.Is(err, errBusy):
			refuse(w, r, busy())
			return
		case errors.Is(err, errRequestTooLarge):
			refuse(w, r, tooLarge(fmt.Sprintf("a body of over %d bytes", wireLimit), rule.MaxBytes))
			return
		case errors.Is(err, errBodyTimeout):
			bodyTimedOut(w, r, errWriter, b.ReadBodyTimeout)
			return
		case err != nil:
			refuse(w, r, connect.NewError(connect.CodeCanceled, err))
			return
		}
		body, err = decompress(r, body, rule.MaxBytes, hold)
		if err != nil {
			if errors.Is(err, errBusy) {
				refuse(w, r, busy())
			} else if errors.Is(err, errRequestTooLarge) {
				refuse(w, r, tooLarge("a body over the limit once decompressed", rule.MaxBytes))
			} else {
				refuse(w, r, errinfo.New(connect.CodeInvalidArgument, errinfo.CodeInvalidArgument, err))
			}
			return
		}
		size := len(body)
		if envelopeProtocol(r) {
			// Every request of these services is one message.
			size -= envelopePrefix
		}
		if size > rule.MaxBytes {
			refuse(w, r, tooLarge(fmt.Sprintf("a message of %d bytes", size), rule.MaxBytes))
			return
		}
		if fb, ok := r.Body.(readBodyBuffer); ok {
			fb.Reset(body)
		} else {
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}

// busy is the answer to a request refused because the node holds too many
// request bytes: unavailable, which clients retry after a while.
func busy() *connect.Error {
	return errinfo.New(connect.CodeUnavailable, errinfo.CodeUnavailable, errBusy)
}

// tooLarge is the answer to a request over its bound.
func tooLarge(what string, limit int) *connect.Error {
	return errinfo.New(connect.CodeInvalidArgument, errinfo.CodeRequestTooLarge,
		fmt.Errorf("%w: %s, the limit is %d bytes", errRequestTooLarge, what, limit))
}

// readBodyBuffer is a request body read whole before the handler runs, as
// the HTTP/1.1 fast loop (package http1) reads them, under the same timeout:
// its bytes are used, and replaced once decompressed, without a copy.
type readBodyBuffer interface {
	Bytes() []byte
	Reset(data []byte)
}

// readBody reads r's body, at most limit bytes, within timeout.
func readBody(w http.ResponseWriter, r *http.Request, limit int64, timeout time.Duration, hold *holding) ([]byte, error) {
	if fb, ok := r.Body.(readBodyBuffer); ok {
		body := fb.Bytes()
		return body, hold.grow(len(body))
	}
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(timeout))
	body, err := readAtMost(r.Body, int(limit), int(r.ContentLength), hold)
	if err != nil && !errors.Is(err, errRequestTooLarge) && !errors.Is(err, errBusy) {
		// The deadline stays: net/http may not drain the rest without one.
		_ = r.Body.Close()
		if isTimeout(err) {
			return nil, errBodyTimeout
		}
		return nil, fmt.Errorf("read request body: %w", err)
	}
	if err != nil {
		return nil, err
	}
	// Streams live on after their request: no deadline from here on.
	_ = rc.SetReadDeadline(time.Time{})
	return body, nil
}

// readAtMost reads r to its end, refusing more than limit bytes; sizeHint,
// if positive, is the expected size. Its buffer never grows past limit+1,
// so it allocates at most about twice the limit. Every allocation is held
// against hold first (errBusy when the node holds too much).
func readAtMost(r io.Reader, limit, sizeHint int, hold *holding) ([]byte, error) {
	if sizeHint <= 0 {
		sizeHint = 4 << 10
	}
	size := min(sizeHint, limit) + 1
	if err := hold.grow(size); err != nil {
		return nil, err
	}
	buf := make([]byte, 0, size)
	for {
		if len(buf) == cap(buf) {
			if len(buf) > limit {
				return nil, errRequestTooLarge
			}
			more := min(cap(buf), limit+1-len(buf))
			if err := hold.grow(more); err != nil {
				return nil, err
			}
			buf = slices.Grow(buf, more)
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			if len(buf) > limit {
				return nil, errRequestTooLarge
			}
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// isTimeout reports whether err is a read deadline passing.
func isTimeout(err error) bool {
	var te interface{ Timeout() bool }
	return errors.As(err, &te) && te.Timeout()
}

// bodyTimedOut answers a request whose body did not come in time: 408 over
// HTTP/1.x, which the JS SDK retries, and an error in the call's protocol
// over HTTP/2, where the connection carries other calls.
func bodyTimedOut(w http.ResponseWriter, r *http.Request, errWriter *connect.ErrorWriter, timeout time.Duration) {
	if r.ProtoMajor != 1 {
		_ = errWriter.Write(w, r, errinfo.New(connect.CodeDeadlineExceeded, errinfo.CodeDeadlineExceeded,
			fmt.Errorf("%w within %v", errBodyTimeout, timeout)))
		return
	}
	h := w.Header()
	h.Set("Connection", "close")
	h.Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusRequestTimeout)
	_, _ = io.WriteString(w, "408 Request Timeout")
}

// envelopeProtocol reports whether r's body is enveloped messages (gRPC,
// gRPC-web, Connect streaming) rather than one bare message.
func envelopeProtocol(r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	return strings.HasPrefix(ct, "application/grpc") || strings.HasPrefix(ct, "application/connect+")
}

// decompress inflates a gzip request body, no message beyond maxBytes, and
// removes the encoding header so the handler takes the body as it is.
// Encodings other than gzip are left to the handler, which refuses them.
func decompress(r *http.Request, body []byte, maxBytes int, hold *holding) ([]byte, error) {
	header := "Content-Encoding"
	ct := r.Header.Get("Content-Type")
	switch {
	case strings.HasPrefix(ct, "application/grpc"):
		header = "Grpc-Encoding"
	case strings.HasPrefix(ct, "application/connect+"):
		header = "Connect-Content-Encoding"
	}
	enc := r.Header.Get(header)
	if enc == "" || enc == "identity" {
		return body, nil
	}
	if enc != "gzip" {
		return body, nil
	}
	if header == "Content-Encoding" {
		out, err := gunzip(body, maxBytes, hold)
		if err != nil {
			return nil, err
		}
		r.Header.Del(header)
		return out, nil
	}
	out, err := inflateEnvelopes(body, maxBytes, hold)
	if err != nil {
		return nil, err
	}
	r.Header.Del(header)
	return out, nil
}

// inflateEnvelopes rewrites enveloped messages with every compressed one
// inflated, the whole at most maxBytes of messages. A malformed envelope is
// passed on as it is, for the handler to refuse in its protocol.
func inflateEnvelopes(body []byte, maxBytes int, hold *holding) ([]byte, error) {
	out := make([]byte, 0, len(body))
	total := 0
	for rest := body; len(rest) > 0; {
		if len(rest) < envelopePrefix {
			return append(out, rest...), nil
		}
		flags, size := rest[0], binary.BigEndian.Uint32(rest[1:envelopePrefix])
		if uint64(size) > uint64(len(rest)-envelopePrefix) {
			return append(out, rest...), nil
		}
		msg := rest[envelopePrefix : envelopePrefix+int(size)]
		rest = rest[envelopePrefix+int(size):]
		if flags&flagCompressed != 0 {
			var err error
			if msg, err = gunzip(msg, maxBytes-total, hold); err != nil {
				return nil, err
			}
		}
		total += len(msg)
		if total > maxBytes {
			return nil, errRequestTooLarge
		}
		if err := hold.grow(len(msg)); err != nil { // its copy below
			return nil, err
		}
		out = append(out, flags&^flagCompressed, 0, 0, 0, 0)
		binary.BigEndian.PutUint32(out[len(out)-4:], uint32(len(msg)))
		out = append(out, msg...)
	}
	return out, nil
}

// gunzip inflates data, refusing output beyond maxBytes.
//
// It inflates twice: first counting, so a body that inflates past maxBytes
// (a gzip bomb) costs CPU only, never memory, then into a buffer of exactly
// the inflated size, held against hold, so what a request holds is what it
// allocates, with no outgrown buffers left for the collector.
func gunzip(data []byte, maxBytes int, hold *holding) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("decompress request: %w", err)
	}
	n, err := io.Copy(io.Discard, io.LimitReader(zr, int64(maxBytes)+1))
	if err != nil {
		return nil, fmt.Errorf("decompress request: %w", err)
	}
	if n > int64(maxBytes) {
		return nil, errRequestTooLarge
	}
	if err := hold.grow(int(n)); err != nil {
		return nil, err
	}
	if err := zr.Reset(bytes.NewReader(data)); err != nil {
		return nil, fmt.Errorf("decompress request: %w", err)
	}
	out := make([]byte, n)
	if _, err := io.ReadFull(zr, out); err != nil {
		return nil, fmt.Errorf("decompress request: %w", err)
	}
	return out, nil
}
