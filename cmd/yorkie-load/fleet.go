package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"connectrpc.com/connect"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
)

// fleet is the synthetic clients of one run: one YorkieService client over
// the run's transport, the sessions attached through it, and the readers of
// their Watch streams.
type fleet struct {
	tr        transport
	client    v1connect.YorkieServiceClient
	closeIdle func()
	conc      int
	sessions  []*session

	stopStreams context.CancelFunc
	readers     sync.WaitGroup
}

// newFleet builds the client of a run that will hold streams Watch streams
// open at once. Over HTTP/1.1 each stream holds a TCP connection, so the file
// descriptor limit is raised for them first; the limit is returned (0 over
// HTTP/2). Nothing is sent yet, so a caller can take a baseline first.
func newFleet(c common, streams int) (*fleet, uint64, error) {
	tr, err := parseTransport(c.transport)
	if err != nil {
		return nil, 0, err
	}
	var limit uint64
	if tr == connectJSONHTTP1 && streams > 0 {
		// One descriptor per stream, plus slack for setup and the runtime.
		if limit, err = raiseFileLimit(uint64(streams) + 256); err != nil {
			return nil, 0, err
		}
	}
	sources, err := parseSourceAddrs(c.sourceAddrs, c.allowRemote)
	if err != nil {
		return nil, 0, err
	}
	client, closeIdle := newClient(c.addr, tr, c.gzip, sources)
	return &fleet{tr: tr, client: client, closeIdle: closeIdle, conc: c.concurrency, stopStreams: func() {}}, limit, nil
}

// attach activates n clients, attaching client i to document docOf(i), with
// up to the run's concurrency calls in flight. Keys carry a tag of their own
// so that runs against the same server do not meet.
func (f *fleet) attach(ctx context.Context, logger *slog.Logger, n, docs int, docOf func(i int) int) error {
	logger.Info("activating and attaching clients", "clients", n, "docs", docs)
	tag := runID()
	f.sessions = make([]*session, n)
	err := parallel(ctx, n, f.conc, func(ctx context.Context, i int) error {
		s, err := activate(ctx, f.client, fmt.Sprintf("load-%s-client-%d", tag, i))
		if err != nil {
			return err
		}
		if err := s.attach(ctx, fmt.Sprintf("load-%s-doc-%d", tag, docOf(i))); err != nil {
			return err
		}
		f.sessions[i] = s
		return nil
	})
	if err != nil {
		return fmt.Errorf("set up clients: %w", err)
	}
	return nil
}

// watch opens every session's Watch stream, up to the run's concurrency at
// once, and hands stream i to read on a goroutine of its own. read must
// return once the stream ends; close ends them all.
func (f *fleet) watch(ctx context.Context, logger *slog.Logger, read func(i int, stream *connect.ServerStreamForClient[api.WatchResponse])) error {
	logger.Info("opening watch streams", "streams", len(f.sessions), "transport", f.tr)
	streamCtx, stop := context.WithCancel(ctx)
	f.stopStreams = stop
	err := parallel(ctx, len(f.sessions), f.conc, func(_ context.Context, i int) error {
		stream, err := f.sessions[i].watch(streamCtx)
		if err != nil {
			return err
		}
		f.readers.Go(func() {
			defer stream.Close()
			read(i, stream)
		})
		return nil
	})
	if err != nil {
		return fmt.Errorf("open streams: %w", err)
	}
	return nil
}

// close ends the streams, waits for their readers and drops the idle
// connections. It may be called again.
func (f *fleet) close() {
	f.stopStreams()
	f.readers.Wait()
	f.closeIdle()
}
