package wire

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
)

// Stream reads a server stream (Watch, WatchDocument) in the background so
// that a test can wait for its next message or its end with a deadline.
type Stream[T any] struct {
	msgs   chan *T
	done   chan struct{}
	err    error
	header http.Header
	ended  time.Time
	cancel context.CancelFunc
	once   sync.Once
}

// streamBuffer is how many messages a Stream holds before its reader waits
// for the test to take some.
const streamBuffer = 256

// OpenStream opens a stream with open, failing t if it cannot, and starts
// reading it; the stream is closed when t ends.
func OpenStream[T any](t testing.TB, open func(ctx context.Context) (*connect.ServerStreamForClient[T], error)) *Stream[T] {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	up, err := open(ctx)
	if err != nil {
		cancel()
		t.Fatalf("open stream: %v", err)
	}
	s := &Stream[T]{msgs: make(chan *T, streamBuffer), done: make(chan struct{}), cancel: cancel}
	t.Cleanup(s.Close)
	go func() {
		defer close(s.done)
		first := true
		for up.Receive() {
			if first {
				s.header = up.ResponseHeader().Clone()
				first = false
			}
			s.msgs <- up.Msg()
		}
		s.err = up.Err()
		if first {
			s.header = up.ResponseHeader().Clone()
		}
		s.ended = time.Now()
		_ = up.Close()
	}()
	return s
}

// Close ends the stream from the client side and waits for its reader.
func (s *Stream[T]) Close() {
	s.once.Do(s.cancel)
	<-s.done
}

// NextWithin returns the next message, waiting at most d for it; with d <= 0
// it only takes one that has already arrived. It returns an error if none
// comes in time, or one carrying the stream's own if the stream ended first.
func (s *Stream[T]) NextWithin(d time.Duration) (*T, error) {
	select {
	case m := <-s.msgs:
		return m, nil
	default:
	}
	if d <= 0 {
		return nil, errors.New("no stream message has arrived")
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case m := <-s.msgs:
		return m, nil
	case <-s.done:
		select {
		case m := <-s.msgs:
			return m, nil
		default:
		}
		return nil, fmt.Errorf("stream ended: %w", s.err)
	case <-timer.C:
		return nil, fmt.Errorf("no stream message within %s", d)
	}
}

// Next returns the next message, failing t if none comes within WaitTimeout
// or the stream ends.
func (s *Stream[T]) Next(t testing.TB) *T {
	t.Helper()
	m, err := s.NextWithin(WaitTimeout)
	if err != nil {
		t.Fatalf("a stream message was expected: %v", err)
	}
	return m
}

// End waits for the stream to end on the server's initiative and returns its
// error, failing t if it is still open after WaitTimeout.
func (s *Stream[T]) End(t testing.TB) error {
	t.Helper()
	select {
	case <-s.done:
		return s.err
	case <-time.After(WaitTimeout):
		t.Fatalf("stream did not end within %s", WaitTimeout)
	}
	return nil
}

// Done is closed when the stream has ended; Err and Ended are valid then.
func (s *Stream[T]) Done() <-chan struct{} { return s.done }

// Err is the error the stream ended with (nil for a clean end); valid once
// Done is closed.
func (s *Stream[T]) Err() error { return s.err }

// Ended is when the stream ended; valid once Done is closed.
func (s *Stream[T]) Ended() time.Time { return s.ended }

// Header is the stream's response header; valid once a message has been
// taken or Done is closed.
func (s *Stream[T]) Header() http.Header { return s.header }
