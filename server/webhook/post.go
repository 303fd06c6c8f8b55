package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// ErrUnreachable is returned when no attempt got an HTTP answer: the
// connection failed, was reset, or the answer did not come within the
// attempt's timeout. The last cause is kept as text only, so a caller's
// errors.Is(err, context.DeadlineExceeded) stays about its own context.
var ErrUnreachable = errors.New("webhook unreachable")

// ErrInvalidURL is returned for a webhook URL that is not an absolute http or
// https URL. It is never retried.
var ErrInvalidURL = errors.New("invalid webhook URL")

// Policy bounds the attempts of one webhook call.
type Policy struct {
	// Timeout bounds each attempt, connecting and reading the answer included.
	Timeout time.Duration
	// MaxRetries is how many times a failed attempt is repeated; the call
	// makes at most MaxRetries+1 attempts.
	MaxRetries int
	// MinBackoff is the wait before the first retry; each later wait doubles,
	// up to MaxBackoff.
	MinBackoff time.Duration
	// MaxBackoff caps the wait between attempts.
	MaxBackoff time.Duration
}

// DefaultPolicy is upstream Yorkie's default for both webhooks: 3 s per
// attempt, 10 retries, waits from 100 ms doubling to 3 s.
func DefaultPolicy() Policy {
	return Policy{Timeout: 3 * time.Second, MaxRetries: 10, MinBackoff: 100 * time.Millisecond, MaxBackoff: 3 * time.Second}
}

// Backoff returns the wait before retry n (0 for the first retry).
func (p Policy) Backoff(n int) time.Duration {
	d := p.MinBackoff
	for i := 0; i < n && d < p.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, p.MaxBackoff)
}

// Validate reports a policy that would make a call hang or never try.
func (p Policy) Validate() error {
	switch {
	case p.Timeout <= 0:
		return errors.New("webhook timeout must be positive")
	case p.MaxRetries < 0:
		return errors.New("webhook retries must not be negative")
	case p.MinBackoff < 0 || p.MaxBackoff < p.MinBackoff:
		return errors.New("webhook backoff must satisfy 0 <= min <= max")
	}
	return nil
}

// Request is one webhook call.
type Request struct {
	// URL must be an absolute http or https URL.
	URL string
	// Header is sent with every attempt.
	Header http.Header
	// Body is sent unchanged with every attempt, so a signature over it holds.
	Body []byte
	// MaxAnswer bounds the answer's body; a longer one is cut there and
	// reported as Truncated.
	MaxAnswer int64
	// FailAlike makes an attempt that ends without an answer (connection
	// refused or reset, name not resolved, answer cut off) last until its
	// timeout, as an attempt to an address that accepts and never answers
	// does: the call then has one shape, attempts and time, whatever is at
	// the address, so its outcome cannot be used to scan ports.
	FailAlike bool
}

// Answer is the HTTP answer of the last attempt.
type Answer struct {
	// Status is the HTTP status; 0 when no answer came.
	Status int
	// Body is the answer's body, cut at the request's MaxAnswer.
	Body []byte
	// Truncated reports that the body was longer than MaxAnswer.
	Truncated bool
	// Attempts is how many requests were sent.
	Attempts int
}

// Retryable reports whether an HTTP status asks to be tried again later.
func Retryable(status int) bool {
	switch status {
	case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// Post sends req with POST, retrying transport failures and Retryable
// statuses with the policy's backoff. It returns the last answer, which may
// still have a Retryable status once the retries are spent. The error is
// ErrInvalidURL or ErrAddressRefused (neither retried), ErrUnreachable, or
// ctx's own error.
func Post(ctx context.Context, client *http.Client, clock Clock, p Policy, req Request) (Answer, error) {
	if err := CheckURL(req.URL); err != nil {
		return Answer{}, err
	}
	for attempt := 0; ; attempt++ {
		start := clock.Now()
		ans, err := postOnce(ctx, client, p.Timeout, req)
		ans.Attempts = attempt + 1
		if ctx.Err() != nil {
			return ans, fmt.Errorf("webhook call: %w", ctx.Err())
		}
		if errors.Is(err, ErrAddressRefused) || errors.Is(err, ErrInvalidURL) {
			return ans, fmt.Errorf("webhook call: %w", err)
		}
		if err != nil && req.FailAlike && !errors.Is(err, context.DeadlineExceeded) {
			// Ended early: wait out the attempt's timeout.
			if werr := Sleep(ctx, clock, p.Timeout-clock.Now().Sub(start)); werr != nil {
				return ans, fmt.Errorf("webhook call: %w (last attempt: %v)", werr, err)
			}
		}
		if err == nil && !Retryable(ans.Status) {
			return ans, nil
		}
		if attempt >= p.MaxRetries {
			if err != nil {
				return ans, fmt.Errorf("%w after %d attempts: %v", ErrUnreachable, ans.Attempts, err)
			}
			return ans, nil
		}
		if werr := Sleep(ctx, clock, p.Backoff(attempt)); werr != nil {
			return ans, fmt.Errorf("webhook call: %w (last attempt: status %d, %v)", werr, ans.Status, err)
		}
	}
}

func postOnce(ctx context.Context, client *http.Client, timeout time.Duration, req Request) (Answer, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, req.URL, bytes.NewReader(req.Body))
	if err != nil {
		return Answer{}, fmt.Errorf("%w: %v", ErrInvalidURL, err)
	}
	for k, vs := range req.Header {
		hreq.Header[k] = vs
	}
	resp, err := client.Do(hreq)
	if err != nil {
		return Answer{}, err
	}
	defer resp.Body.Close()
	limit := req.MaxAnswer
	if limit <= 0 {
		limit = 64 << 10
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return Answer{Status: resp.StatusCode}, fmt.Errorf("read answer: %w", err)
	}
	ans := Answer{Status: resp.StatusCode, Body: body}
	if int64(len(body)) > limit {
		ans.Body, ans.Truncated = body[:limit], true
	}
	return ans, nil
}

// Sleep waits d on clock, or until ctx ends.
func Sleep(ctx context.Context, clock Clock, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	done := make(chan struct{})
	t := clock.AfterFunc(d, func() { close(done) })
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		t.Stop()
		return ctx.Err()
	}
}

// CheckURL reports a URL Post would refuse without trying.
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidURL, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%w: %q is not an absolute http or https URL", ErrInvalidURL, raw)
	}
	return nil
}
