package rpc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"connectrpc.com/connect"
)

// bodyReadTimeout bounds how long a client may take to send a request body.
const bodyReadTimeout = 30 * time.Second

// envelopePrefix is the framing the gRPC, gRPC-web and Connect streaming
// protocols put before a message; it does not count against the limit.
const envelopePrefix = 5

// errRequestTooLarge is the cause of a rejected oversized request.
var errRequestTooLarge = errors.New("request is too large")

// limitBody rejects request bodies larger than maxBytes before the handler
// sees them, answering in the caller's protocol with code resource_exhausted
// and the ErrorInfo code ErrRequestTooLarge. Every YorkieService request is a
// single message (unary or server-streaming calls), so the body is read whole.
// Compressed bodies are also checked after decompression by the handler's
// connect.WithReadMaxBytes (that error carries no ErrorInfo).
func limitBody(next http.Handler, maxBytes int) http.Handler {
	errWriter := connect.NewErrorWriter()
	limit := int64(maxBytes) + envelopePrefix
	tooLarge := func(w http.ResponseWriter, r *http.Request, size string) {
		err := newError(connect.CodeResourceExhausted, CodeRequestTooLarge,
			fmt.Errorf("%w: %s bytes, the limit is %d", errRequestTooLarge, size, maxBytes))
		_ = errWriter.Write(w, r, err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		if r.ContentLength > limit {
			tooLarge(w, r, fmt.Sprint(r.ContentLength))
			return
		}
		if _, whole := r.Body.(*fastBody); whole {
			// The fast loop read the body already, within its limit and the
			// read timeout.
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Now().Add(bodyReadTimeout))
		body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
		_ = rc.SetReadDeadline(time.Time{})
		if err != nil {
			_ = errWriter.Write(w, r, connect.NewError(connect.CodeCanceled, fmt.Errorf("read request body: %w", err)))
			return
		}
		if int64(len(body)) > limit {
			tooLarge(w, r, "more than "+fmt.Sprint(limit))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}
