package integration_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/rpc/errinfo"
	"github.com/yorkie-affinity/yorkie/server/rpc/limits"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
)

// TestClientMetadataBound activates clients with metadata at and just over
// the default bound: the larger one can never be accepted, so it gets a
// code clients do not retry.
func TestClientMetadataBound(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, c v1connect.YorkieServiceClient, _ *server.Server) {
		activate := func(md map[string]string) error {
			_, err := c.ActivateClient(wire.Context(t), connect.NewRequest(&api.ActivateClientRequest{
				ClientKey: wire.UniqueKey(t, "client"),
				Metadata:  md,
			}))
			return err
		}
		// Keys and values count together: 2 keys of 1 byte and values
		// filling the rest reach the bound exactly.
		half := (limits.DefaultMaxMetadataBytes - 2) / 2
		atBound := map[string]string{"a": strings.Repeat("x", half), "b": strings.Repeat("y", limits.DefaultMaxMetadataBytes-2-half)}
		wire.Must(t, activate(atBound), "activate with metadata at the bound")

		atBound["c"] = ""
		wantError(t, activate(atBound), connect.CodeInvalidArgument, errinfo.CodeMetadataTooLarge)
	})
}

// TestWatchStreamBound opens a client's Watch streams up to the bound: the
// next one is refused with resource_exhausted, which the SDK retries, and
// once one of the open streams ends a retry gets through.
func TestWatchStreamBound(t *testing.T) {
	const bound = 3
	forEachProtocol(t, func(t *testing.T, c v1connect.YorkieServiceClient, _ *server.Server) {
		r := attachedReplica(t, c)
		var open []*wire.Stream[api.WatchResponse]
		for range bound - 1 {
			s := r.Watch(t)
			if s.Next(t).GetInitialization() == nil {
				t.Fatalf("first Watch message is not an initialization")
			}
			open = append(open, s)
		}
		// The deprecated form counts against the same bound.
		legacy := r.WatchDocument(t)
		if legacy.Next(t).GetInitialization() == nil {
			t.Fatalf("first WatchDocument message is not an initialization")
		}

		refused := r.Watch(t)
		wantError(t, refused.End(t), connect.CodeResourceExhausted, errinfo.CodeTooManyWatchStreams)
		refusedLegacy := r.WatchDocument(t)
		wantError(t, refusedLegacy.End(t), connect.CodeResourceExhausted, errinfo.CodeTooManyWatchStreams)

		// Another client has bounds of its own.
		other := newReplica(t, c)
		other.MustAttach(r.DocKey)
		if other.Watch(t).Next(t).GetInitialization() == nil {
			t.Fatalf("another client's Watch was not initialized")
		}

		// Retry as the SDK does (every second there; quicker here) until the
		// server has seen the closed stream go.
		open[0].Close()
		retryUntil(t, "a Watch after one stream closed", func() error {
			s := r.Watch(t)
			m, err := s.NextWithin(wire.WaitTimeout)
			if err != nil {
				if connect.CodeOf(s.Err()) != connect.CodeResourceExhausted {
					t.Fatalf("Watch after a stream closed: %v; want it served or refused as resource_exhausted", err)
				}
				return err
			}
			if m.GetInitialization() == nil {
				t.Fatalf("first Watch message is not an initialization")
			}
			return nil
		})
	}, func(cfg *server.Config) { cfg.Limits.MaxWatchStreamsPerClient = bound })
}

// TestAttachmentBound attaches documents up to the bound: the next attach is
// refused with ErrTooManyAttachments (resource_exhausted, as upstream; the
// SDK does not retry an attach), and succeeds after a detach.
func TestAttachmentBound(t *testing.T) {
	const bound = 2
	forEachProtocol(t, func(t *testing.T, c v1connect.YorkieServiceClient, _ *server.Server) {
		r := newReplica(t, c)
		for range bound {
			r.MustAttach(wire.UniqueKey(t, "doc"))
		}
		extra := wire.UniqueKey(t, "doc")
		_, err := r.Attach(wire.Context(t), extra)
		wantError(t, err, connect.CodeResourceExhausted, errinfo.CodeTooManyAttachments)

		// Another client has its own bound.
		newReplica(t, c).MustAttach(extra)

		_, err = r.Detach(wire.Context(t))
		wire.Must(t, err, "detach the last attached document")
		r.MustAttach(extra)
	}, func(cfg *server.Config) { cfg.Limits.MaxAttachmentsPerClient = bound })
}

// TestNegativeLimitsRemoveBounds checks that a negative limit bounds
// nothing, as the flags document.
func TestNegativeLimitsRemoveBounds(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, c v1connect.YorkieServiceClient, _ *server.Server) {
		_, err := c.ActivateClient(wire.Context(t), connect.NewRequest(&api.ActivateClientRequest{
			ClientKey: wire.UniqueKey(t, "client"),
			Metadata:  map[string]string{"big": strings.Repeat("x", limits.DefaultMaxMetadataBytes*2)},
		}))
		wire.Must(t, err, "activate with large metadata and no bound")
		r := newReplica(t, c)
		for range 3 {
			r.MustAttach(wire.UniqueKey(t, "doc"))
		}
	}, func(cfg *server.Config) {
		cfg.Limits = limits.Limits{MaxMetadataBytes: -1, MaxWatchStreamsPerClient: -1, MaxAttachmentsPerClient: -1}
		cfg.MaxRequestBytes = 1 << 20
	})
}

// retryUntil calls f until it returns nil, failing t after wire.WaitTimeout.
func retryUntil(t *testing.T, what string, f func() error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wire.WaitTimeout)
	defer cancel()
	for {
		err := f()
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not within %s: %v", what, wire.WaitTimeout, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
