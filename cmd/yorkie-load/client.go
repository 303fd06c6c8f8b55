package main

import (
	"bufio"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"connectrpc.com/connect"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
	"github.com/yorkie-affinity/yorkie/server/servertest/sdksim"
)

// transport is the wire protocol the synthetic clients speak.
type transport string

const (
	// connectJSONHTTP1 is what the JS SDK does: Connect JSON over HTTP/1.1,
	// so every open Watch stream holds a TCP connection of its own.
	connectJSONHTTP1 transport = "connect-json-http1"
	// grpcH2C is gRPC over cleartext HTTP/2: streams share connections.
	grpcH2C transport = "grpc-h2c"
)

func parseTransport(s string) (transport, error) {
	switch t := transport(s); t {
	case connectJSONHTTP1, grpcH2C:
		return t, nil
	}
	return "", fmt.Errorf("unknown -transport %q (want %s or %s)", s, connectJSONHTTP1, grpcH2C)
}

// newClient returns a YorkieService client for addr over tr, and a function
// that drops its idle connections. Unless gzip is set it asks for
// uncompressed answers, as the JS SDK gets them; otherwise a JSON answer
// large enough is gzipped by the server, which then dominates its CPU.
func newClient(addr string, tr transport, gzip bool, sources []net.IP) (v1connect.YorkieServiceClient, func()) {
	var protocols http.Protocols
	var opts []connect.ClientOption
	ht := &http.Transport{
		// Keep enough idle connections that unary calls during setup reuse
		// them instead of dialling a fresh one per call.
		MaxIdleConns:        1024,
		MaxIdleConnsPerHost: 1024,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  !gzip,
	}
	if len(sources) > 0 {
		// Each connection is dialled from the next source address in turn,
		// so that many connections to one server address do not run out of
		// one address's ephemeral ports.
		var next atomic.Uint64
		ht.DialContext = func(ctx context.Context, network, address string) (net.Conn, error) {
			src := sources[int(next.Add(1)-1)%len(sources)]
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: src}}
			return d.DialContext(ctx, network, address)
		}
	}
	if !gzip {
		opts = append(opts, connect.WithAcceptCompression("gzip", nil, nil))
	}
	switch tr {
	case grpcH2C:
		protocols.SetUnencryptedHTTP2(true)
		opts = append(opts, connect.WithGRPC())
	default:
		protocols.SetHTTP1(true)
		opts = append(opts, connect.WithProtoJSON())
	}
	ht.Protocols = &protocols
	c := v1connect.NewYorkieServiceClient(&http.Client{Transport: ht}, "http://"+addr, opts...)
	return c, ht.CloseIdleConnections
}

// runID returns a short random tag that keeps the keys of one run apart from
// those of earlier runs against the same server.
func runID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// session is one synthetic client attached to one document: its
// sdksim.Client numbers the changes like the SDK and keeps the checkpoint the
// server last sent. It is not safe for concurrent use.
type session struct {
	*sdksim.Client
	c     v1connect.YorkieServiceClient
	docID string
	// vv is the document's version vector as the SDK keeps it: its own
	// lamport and the highest of every pulled change's vector. The SDK sends
	// it with every pack; without it the server's minimum synced vector
	// never rises and no tombstone is ever collected, so the document, and
	// with it every snapshot, grows with the run.
	vv map[string]int64
}

// pack is the SDK's change pack: the pending changes, the checkpoint and
// the document's version vector.
func (s *session) pack() *api.ChangePack {
	p := s.Pack()
	s.vv[sdksim.VectorKey(s.Actor)] = s.Lamport
	p.VersionVector = &api.VersionVector{Vector: maps.Clone(s.vv)}
	return p
}

// absorb takes in an answer's pack and raises the version vector to the
// pulled changes'.
func (s *session) absorb(p *api.ChangePack) ([]*api.Change, error) {
	pulled, err := s.Absorb(p)
	for _, ch := range pulled {
		for k, v := range ch.GetId().GetVersionVector().GetVector() {
			s.vv[k] = max(s.vv[k], v)
		}
	}
	return pulled, err
}

// activate activates a client with key.
func activate(ctx context.Context, c v1connect.YorkieServiceClient, key string) (*session, error) {
	resp, err := c.ActivateClient(ctx, connect.NewRequest(&api.ActivateClientRequest{ClientKey: key}))
	if err != nil {
		return nil, fmt.Errorf("activate client %s: %w", key, err)
	}
	state, err := sdksim.New(resp.Msg.GetClientId())
	if err != nil {
		return nil, fmt.Errorf("activate client %s: %w", key, err)
	}
	return &session{Client: state, c: c, vv: map[string]int64{}}, nil
}

// attach attaches docKey with the SDK's initial presence change, which names
// the client.
func (s *session) attach(ctx context.Context, docKey string) error {
	s.Attached(docKey)
	clear(s.vv)
	s.NewPresence(map[string]string{"name": strconv.Quote(s.ID)})
	resp, err := s.c.AttachDocument(ctx, connect.NewRequest(&api.AttachDocumentRequest{
		ClientId:   s.ID,
		ChangePack: s.pack(),
	}))
	if err != nil {
		return fmt.Errorf("attach %s to %s: %w", s.ID, docKey, err)
	}
	s.docID = resp.Msg.GetDocumentId()
	if s.docID == "" {
		return fmt.Errorf("attach %s to %s: no document ID in the answer", s.ID, docKey)
	}
	if _, err := s.absorb(resp.Msg.GetChangePack()); err != nil {
		return fmt.Errorf("attach %s to %s: %w", s.ID, docKey, err)
	}
	return nil
}

// pushChange pushes one Set change and pulls what others stored, returning
// the number of changes pulled. Every session sets the same key each time, so
// the document stays as large as its clients.
func (s *session) pushChange(ctx context.Context) (int, error) {
	s.NewSet("k" + s.ID)
	resp, err := s.c.PushPullChanges(ctx, connect.NewRequest(&api.PushPullChangesRequest{
		ClientId:   s.ID,
		DocumentId: s.docID,
		ChangePack: s.pack(),
	}))
	if err != nil {
		return 0, fmt.Errorf("pushpull %s on %s: %w", s.ID, s.DocKey, err)
	}
	pulled, err := s.absorb(resp.Msg.GetChangePack())
	if err != nil {
		return 0, fmt.Errorf("pushpull %s on %s: %w", s.ID, s.DocKey, err)
	}
	return len(pulled), nil
}

// watch opens the session's Watch stream and waits for its first message,
// which must be the initialization, as the SDK's attach does.
func (s *session) watch(ctx context.Context) (*connect.ServerStreamForClient[api.WatchResponse], error) {
	stream, err := s.c.Watch(ctx, connect.NewRequest(&api.WatchRequest{
		ClientId: s.ID,
		Resources: []*api.ResourceDescriptor{{Resource: &api.ResourceDescriptor_Document{
			Document: &api.DocumentDescriptor{DocumentId: s.docID},
		}}},
	}))
	if err != nil {
		return nil, fmt.Errorf("watch %s by %s: %w", s.DocKey, s.ID, err)
	}
	if !stream.Receive() {
		err := stream.Err()
		_ = stream.Close()
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("watch %s by %s: first message: %w", s.DocKey, s.ID, err)
	}
	if stream.Msg().GetInitialization() == nil {
		_ = stream.Close()
		return nil, fmt.Errorf("watch %s by %s: first message is not the initialization", s.DocKey, s.ID)
	}
	return stream, nil
}

// parallel runs f for 0..n-1 with up to conc at once and returns the first
// error, after which the remaining indexes are skipped.
func parallel(ctx context.Context, n, conc int, f func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(conc, n) {
		wg.Go(func() {
			for i := range next {
				if err := f(ctx, i); err != nil {
					cancel(err)
				}
			}
		})
	}
feed:
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return ctx.Err()
}

// metrics is a scrape of the server's /metrics: each family's samples
// summed over their labels under the bare name, and each labelled sample
// under its full series name (name{labels}) for histogram buckets.
type metrics map[string]float64

// scrape reads the server's Prometheus text exposition. When gc is set it
// first asks pprof for a heap profile with gc=1, which runs a collection in
// the server, so memory figures do not depend on when the last GC ran.
func scrape(ctx context.Context, metricsAddr string, gc bool) (metrics, error) {
	if gc {
		if err := get(ctx, "http://"+metricsAddr+"/debug/pprof/heap?gc=1", nil); err != nil {
			return nil, fmt.Errorf("force server GC: %w", err)
		}
	}
	m := metrics{}
	err := get(ctx, "http://"+metricsAddr+"/metrics", func(r io.Reader) error {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if line == "" || line[0] == '#' {
				continue
			}
			name, rest, _ := strings.Cut(line, " ")
			series := ""
			if i := strings.IndexByte(line, '{'); i >= 0 {
				name = line[:i]
				if j := strings.LastIndexByte(line, '}'); j >= 0 {
					series = line[:j+1]
					rest = strings.TrimSpace(line[j+1:])
				}
			}
			if fields := strings.Fields(rest); len(fields) > 0 {
				if v, err := strconv.ParseFloat(fields[0], 64); err == nil {
					m[name] += v
					if series != "" {
						m[series] = v
					}
				}
			}
		}
		return sc.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("scrape metrics: %w", err)
	}
	return m, nil
}

// get fetches url and hands the body to read (nil: discard it).
func get(ctx context.Context, url string, read func(io.Reader) error) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: status %s", url, resp.Status)
	}
	if read == nil {
		_, err = io.Copy(io.Discard, resp.Body)
	} else {
		err = read(resp.Body)
	}
	if err != nil {
		return fmt.Errorf("GET %s: read body: %w", url, err)
	}
	return nil
}

// raiseFileLimit lifts the soft RLIMIT_NOFILE to the hard limit and checks
// that need descriptors fit; with one TCP connection per stream the soft
// limit is what usually stops a run first.
func raiseFileLimit(need uint64) (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, fmt.Errorf("read RLIMIT_NOFILE: %w", err)
	}
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			return 0, fmt.Errorf("raise RLIMIT_NOFILE to %d: %w", lim.Max, err)
		}
	}
	if lim.Cur < need {
		return lim.Cur, fmt.Errorf("file descriptor limit %d is below the %d this run needs (raise the hard limit: ulimit -Hn)", lim.Cur, need)
	}
	return lim.Cur, nil
}

// cpuTime returns the CPU time this process has used, user and system.
func cpuTime() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// handlerQuantile estimates the q-quantile of the server's own handling time
// of procedure between two scrapes, from the yorkie_rpc_duration_seconds
// histogram: the upper bound of the bucket the quantile falls in, in
// milliseconds (0 when no call finished in between, -1 when it lies beyond
// the largest finite bucket, which JSON could not carry). Set beside the
// latency the client saw, it separates time in the server's handler from
// time in connections, queues and scheduling on either side.
func handlerQuantile(before, after metrics, procedure string, q float64) float64 {
	type bucket struct{ le, n float64 }
	var buckets []bucket
	want := `procedure="/yorkie.v1.YorkieService/` + procedure + `"`
	for series, v := range after {
		if !strings.HasPrefix(series, "yorkie_rpc_duration_seconds_bucket{") ||
			!strings.Contains(series, want) || !strings.Contains(series, `code="ok"`) {
			continue
		}
		_, le, ok := strings.Cut(series, `le="`)
		if !ok {
			continue
		}
		le, _, _ = strings.Cut(le, `"`)
		bound, err := strconv.ParseFloat(le, 64) // "+Inf" parses as +Inf
		if err != nil {
			continue
		}
		buckets = append(buckets, bucket{bound, v - before[series]})
	}
	slices.SortFunc(buckets, func(a, b bucket) int { return cmp.Compare(a.le, b.le) })
	if len(buckets) == 0 || buckets[len(buckets)-1].n == 0 {
		return 0
	}
	total := buckets[len(buckets)-1].n
	for _, b := range buckets {
		if b.n >= q*total {
			if math.IsInf(b.le, 1) {
				return -1
			}
			return b.le * 1000
		}
	}
	return -1
}
