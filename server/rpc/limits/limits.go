// Package limits bounds what one client may hold on a node.
//
// It bounds a client's metadata size, its open Watch streams and its
// attached documents.
package limits

import (
	"context"
	"fmt"
	"sync"

	"connectrpc.com/connect"
	"github.com/yorkie-affinity/yorkie/server/rpc/errinfo"
)

// Defaults of Limits, generous enough for any honest client.
const (
	DefaultMaxMetadataBytes         = 64 << 10
	DefaultMaxWatchStreamsPerClient = 100
	DefaultMaxAttachmentsPerClient  = 1000
)

// Limits bound what one client may hold on the server. Zero fields take the
// defaults; a negative field removes that bound.
type Limits struct {
	// MaxMetadataBytes bounds the keys and values of ActivateClient's
	// metadata together. A request over it will never succeed, so it is
	// refused with invalid_argument, which clients do not retry.
	MaxMetadataBytes int
	// MaxWatchStreamsPerClient bounds one client's Watch streams open on
	// one node. A stream over it is refused with resource_exhausted, which
	// the JS SDK retries every second: it succeeds once another of the
	// client's streams ends (reconnecting streams briefly overlap with the
	// ones the server has not yet seen close).
	MaxWatchStreamsPerClient int
	// MaxAttachmentsPerClient bounds the documents one client has attached.
	// An attach over it is refused with resource_exhausted and the code
	// ErrTooManyAttachments, as upstream Yorkie does; the SDK does not
	// retry an attach.
	MaxAttachmentsPerClient int
}

// WithDefaults returns l with its zero fields set to the defaults.
func (l Limits) WithDefaults() Limits {
	def := func(v, d int) int {
		if v == 0 {
			return d
		}
		return v
	}
	l.MaxMetadataBytes = def(l.MaxMetadataBytes, DefaultMaxMetadataBytes)
	l.MaxWatchStreamsPerClient = def(l.MaxWatchStreamsPerClient, DefaultMaxWatchStreamsPerClient)
	l.MaxAttachmentsPerClient = def(l.MaxAttachmentsPerClient, DefaultMaxAttachmentsPerClient)
	return l
}

// CheckMetadata refuses metadata over the bound.
func (l Limits) CheckMetadata(md map[string]string) error {
	if l.MaxMetadataBytes < 0 {
		return nil
	}
	n := 0
	for k, v := range md {
		n += len(k) + len(v)
	}
	if n > l.MaxMetadataBytes {
		return errinfo.New(connect.CodeInvalidArgument, errinfo.CodeMetadataTooLarge, fmt.Errorf("client metadata is larger than %d bytes (keys and values together)", l.MaxMetadataBytes))
	}
	return nil
}

// CheckAttachments refuses an attach by a client that has the most
// documents attached already, counted by count. Attaches racing for the
// last places may together pass it by a few.
func (l Limits) CheckAttachments(ctx context.Context, clientID string, count func(context.Context, string) (int, error)) error {
	limit := l.MaxAttachmentsPerClient
	if limit < 0 {
		return nil
	}
	n, err := count(ctx, clientID)
	if err != nil {
		return err
	}
	if n >= limit {
		return errinfo.New(connect.CodeResourceExhausted, errinfo.CodeTooManyAttachments, fmt.Errorf("client %s already has %d documents attached", clientID, n))
	}
	return nil
}

// Streams counts the open Watch streams of each client on this node; the
// zero value counts none.
type Streams struct {
	mu sync.Mutex
	n  map[string]int
}

// Open counts a new stream of the client unless it has limit open already
// (a negative limit bounds nothing); the returned function ends it.
func (c *Streams) Open(clientID string, limit int) (func(), error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if limit >= 0 && c.n[clientID] >= limit {
		return nil, errinfo.New(connect.CodeResourceExhausted, errinfo.CodeTooManyWatchStreams, fmt.Errorf("client %s already has %d Watch streams open on this node", clientID, c.n[clientID]))
	}
	if c.n == nil {
		c.n = make(map[string]int)
	}
	c.n[clientID]++
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			if c.n[clientID]--; c.n[clientID] <= 0 {
				delete(c.n, clientID)
			}
			c.mu.Unlock()
		})
	}, nil
}
