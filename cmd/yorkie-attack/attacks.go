package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/wrapperspb"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
	"github.com/yorkie-affinity/yorkie/server/rpc/errinfo"
	"github.com/yorkie-affinity/yorkie/server/servertest/sdksim"
)

// silent accepts connections and never answers.
type silent struct {
	l        net.Listener
	mu       sync.Mutex
	conns    []net.Conn
	accepted atomic.Int64
}

func newSilent() (*silent, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &silent{l: l}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s.accepted.Add(1)
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			go func() { _, _ = io.Copy(io.Discard, c) }() // notices the peer closing
		}
	}()
	return s, nil
}

func (s *silent) url() string { return "http://" + s.l.Addr().String() + "/hook" }

// open counts the connections the server still holds to the endpoint.
func (s *silent) open() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.conns {
		_ = c.SetReadDeadline(time.Now().Add(time.Millisecond))
		var b [1]byte
		if _, err := c.Read(b[:]); err != nil && isTimeout(err) {
			n++
		}
	}
	return n
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func (s *silent) close() {
	_ = s.l.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		_ = c.Close()
	}
}

// code names the outcome of a call for the tables.
func code(err error) string {
	if err == nil {
		return "ok"
	}
	var ce *connect.Error
	if errors.As(err, &ce) {
		return ce.Code().String()
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "gave up"
	}
	return "transport error"
}

// activate activates a client and attaches docKey with a presence change.
func activate(ctx context.Context, c v1connect.YorkieServiceClient, key string) (*sdksim.Client, error) {
	resp, err := c.ActivateClient(ctx, connect.NewRequest(&api.ActivateClientRequest{ClientKey: key}))
	if err != nil {
		return nil, fmt.Errorf("activate %s: %w", key, err)
	}
	return sdksim.New(resp.Msg.GetClientId())
}

// attach attaches s to docKey and returns the document's ID.
func attach(ctx context.Context, c v1connect.YorkieServiceClient, s *sdksim.Client, docKey string) (string, error) {
	s.Attached(docKey)
	s.NewPresence(map[string]string{"name": strconv.Quote(s.ID)})
	resp, err := c.AttachDocument(ctx, connect.NewRequest(&api.AttachDocumentRequest{ClientId: s.ID, ChangePack: s.Pack()}))
	if err != nil {
		return "", fmt.Errorf("attach %s: %w", docKey, err)
	}
	if _, err := s.Absorb(resp.Msg.GetChangePack()); err != nil {
		return "", err
	}
	return resp.Msg.GetDocumentId(), nil
}

// push pushes s's pending changes.
func push(ctx context.Context, c v1connect.YorkieServiceClient, s *sdksim.Client, docID string) ([]*api.Change, error) {
	resp, err := c.PushPullChanges(ctx, connect.NewRequest(&api.PushPullChangesRequest{ClientId: s.ID, DocumentId: docID, ChangePack: s.Pack()}))
	if err != nil {
		return nil, err
	}
	return s.Absorb(resp.Msg.GetChangePack())
}

// worst probes f every interval until ctx ends and returns the longest
// answer; a probe that fails counts as its bound.
func worst(ctx context.Context, interval time.Duration, f func() (time.Duration, error)) func() (time.Duration, int) {
	var mu sync.Mutex
	var max time.Duration
	failed := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			d, err := f()
			mu.Lock()
			if err != nil {
				failed++
			}
			if d > max {
				max = d
			}
			mu.Unlock()
			select {
			case <-ctx.Done():
			case <-time.After(interval):
			}
		}
	}()
	return func() (time.Duration, int) {
		<-done
		return max, failed
	}
}

// probeBound bounds each probe of another project's call or /healthz.
const probeBound = 10 * time.Second

func runAuth(ctx context.Context, t *target, cfg config, logger *slog.Logger) ([]figure, error) {
	return authAttack(ctx, t, authRun{cfg.authRequests, cfg.authSpread, cfg.authGiveUp, 0}, logger)
}

// runAuthLong is the auth attack at a project whose webhook request
// timeout is long (an hour by default): before the fix each call held its
// goroutines and descriptors for that long.
func runAuthLong(ctx context.Context, t *target, cfg config, logger *slog.Logger) ([]figure, error) {
	return authAttack(ctx, t, authRun{cfg.longRequests, cfg.longSpread, cfg.authGiveUp, cfg.longTimeout}, logger)
}

// authRun sizes one auth attack.
type authRun struct {
	requests int
	spread   time.Duration
	giveUp   time.Duration
	timeout  time.Duration // the project's webhook request timeout; 0: its default
}

func authAttack(ctx context.Context, t *target, cfg authRun, logger *slog.Logger) ([]figure, error) {
	hook, err := newSilent()
	if err != nil {
		return nil, err
	}
	defer hook.close()
	fields := &api.UpdatableProjectFields{
		AuthWebhookUrl:     wrapperspb.String(hook.url()),
		AuthWebhookMethods: &api.UpdatableProjectFields_AuthWebhookMethods{Methods: []string{"ActivateClient"}},
	}
	if cfg.timeout > 0 {
		fields.AuthWebhookRequestTimeout = wrapperspb.String(cfg.timeout.String())
	}
	p, err := t.project(ctx, "auth-attacker", fields)
	if err != nil {
		return nil, err
	}
	attacker, atr := t.yorkie(p.GetPublicKey())
	defer atr.CloseIdleConnections()
	victim, vtr := t.yorkie("")
	defer vtr.CloseIdleConnections()
	idle, err := t.usage(ctx, false)
	if err != nil {
		return nil, err
	}
	victimCall := func() (time.Duration, error) {
		cctx, cancel := context.WithTimeout(ctx, probeBound)
		defer cancel()
		start := time.Now()
		_, err := victim.ActivateClient(cctx, connect.NewRequest(&api.ActivateClientRequest{ClientKey: "victim"}))
		return time.Since(start), err
	}
	health := func() (time.Duration, error) {
		start := time.Now()
		_, err := t.healthz(ctx)
		if err != nil {
			return time.Since(start), err
		}
		return time.Since(start), nil
	}
	_, _ = victimCall() // warm: the first call creates the default project's state
	victimIdle, _ := victimCall()
	healthIdle, _ := health()

	window, endWindow := context.WithCancel(ctx)
	victimWorst := worst(window, 250*time.Millisecond, victimCall)
	healthWorst := worst(window, 250*time.Millisecond, health)
	var peak usage
	var peakMu sync.Mutex
	sampler := worst(window, 200*time.Millisecond, func() (time.Duration, error) {
		u, err := t.usage(ctx, false)
		peakMu.Lock()
		peak.goroutines, peak.fds = max(peak.goroutines, u.goroutines), max(peak.fds, u.fds)
		peakMu.Unlock()
		return 0, err
	})

	var wg sync.WaitGroup
	var mu sync.Mutex
	outcomes := map[string]int{}
	interval := cfg.spread / time.Duration(max(cfg.requests, 1))
	start := time.Now()
	for i := range cfg.requests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, cfg.giveUp)
			defer cancel()
			// A token of its own each, so no two calls share a webhook
			// answer.
			req := connect.NewRequest(&api.ActivateClientRequest{ClientKey: fmt.Sprintf("a%d", i)})
			req.Header().Set("Authorization", fmt.Sprintf("token-%d", i))
			_, err := attacker.ActivateClient(cctx, req)
			mu.Lock()
			outcomes[code(err)]++
			mu.Unlock()
		}()
		if d := time.Until(start.Add(time.Duration(i+1) * interval)); d > 0 {
			time.Sleep(d)
		}
	}
	wg.Wait()
	atr.CloseIdleConnections()
	logger.Info("auth: attackers gone", "after", time.Since(start))
	// The attackers have all given up; what the server still holds for
	// them three seconds later is what a webhook call outliving its caller
	// costs.
	time.Sleep(3 * time.Second)
	endWindow()
	vw, vfail := victimWorst()
	hw, hfail := healthWorst()
	_, _ = sampler()
	after, err := t.usage(ctx, false)
	if err != nil {
		return nil, err
	}
	tooMany := strings.Count(t.log.String(), "too many open files")
	timeoutNote := ""
	if cfg.timeout > 0 {
		timeoutNote = "webhook request timeout " + cfg.timeout.String() + ", "
	}
	figs := []figure{
		{"attacking calls (" + timeoutNote + "each gives up after " + cfg.giveUp.String() + ")", fmt.Sprintf("%d over %v: %s", cfg.requests, cfg.spread, outcomeString(outcomes))},
		{"server goroutines: idle / peak / 3 s after the attackers left", fmt.Sprintf("%.0f / %.0f / %.0f", idle.goroutines, peak.goroutines, after.goroutines)},
		{"server open descriptors: idle / peak / 3 s after", fmt.Sprintf("%.0f / %.0f / %.0f", idle.fds, peak.fds, after.fds)},
		{"webhook connections still open 3 s after", strconv.Itoa(hook.open())},
		{"/healthz: idle / worst during the attack", fmt.Sprintf("%s / %s (%d failed within %v)", ms(healthIdle), ms(hw), hfail, probeBound)},
		{"another project's ActivateClient: idle / worst", fmt.Sprintf("%s / %s (%d failed within %v)", ms(victimIdle), ms(vw), vfail, probeBound)},
	}
	if cfg.timeout > 0 {
		figs = append(figs, figure{"server log lines \"too many open files\"", strconv.Itoa(tooMany)})
	}
	return figs, nil
}

func outcomeString(m map[string]int) string {
	var parts []string
	for _, k := range []string{"ok", "gave up", "internal", "unavailable", "resource_exhausted", "invalid_argument", "unauthenticated", "permission_denied", "transport error"} {
		if m[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", m[k], k))
			delete(m, k)
		}
	}
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%d %s", v, k))
	}
	return strings.Join(parts, ", ")
}

func runAuthPort(ctx context.Context, t *target, cfg config, _ *slog.Logger) ([]figure, error) {
	hook, err := newSilent()
	if err != nil {
		return nil, err
	}
	defer hook.close()
	closedL, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	closedURL := "http://" + closedL.Addr().String() + "/hook"
	_ = closedL.Close()
	policy := func(url string) *api.UpdatableProjectFields {
		return &api.UpdatableProjectFields{
			AuthWebhookUrl:             wrapperspb.String(url),
			AuthWebhookMethods:         &api.UpdatableProjectFields_AuthWebhookMethods{Methods: []string{"ActivateClient"}},
			AuthWebhookRequestTimeout:  wrapperspb.String(cfg.portTimeout.String()),
			AuthWebhookMaxRetries:      wrapperspb.UInt64(2),
			AuthWebhookMinWaitInterval: wrapperspb.String("100ms"),
			AuthWebhookMaxWaitInterval: wrapperspb.String("200ms"),
		}
	}
	var figs []figure
	for _, tc := range []struct{ name, url string }{{"closed port", closedURL}, {"open port, never answers", hook.url()}} {
		p, err := t.project(ctx, "port-"+strings.Fields(tc.name)[0], policy(tc.url))
		if err != nil {
			return nil, err
		}
		c, tr := t.yorkie(p.GetPublicKey())
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		start := time.Now()
		_, err = c.ActivateClient(cctx, connect.NewRequest(&api.ActivateClientRequest{ClientKey: "scan"}))
		took := time.Since(start)
		cancel()
		tr.CloseIdleConnections()
		figs = append(figs, figure{tc.name + ": answer / time (" + cfg.portTimeout.String() + " timeout, 2 retries)",
			fmt.Sprintf("%s %q / %s", code(err), errinfo.Metadata(err)["code"], ms(took))})
	}
	return figs, nil
}

// eventHook records when each document's event arrives.
type eventHook struct {
	srv     *http.Server
	url     string
	mu      sync.Mutex
	arrived map[string]chan time.Time
}

func newEventHook() (*eventHook, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	h := &eventHook{url: "http://" + l.Addr().String() + "/events", arrived: map[string]chan time.Time{}}
	h.srv = &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := time.Now()
		var body struct {
			Attributes struct {
				Key string `json:"key"`
			} `json:"attributes"`
		}
		raw, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(raw, &body)
		select {
		case h.ch(body.Attributes.Key) <- now:
		default:
		}
		w.WriteHeader(http.StatusOK)
	})}
	go func() { _ = h.srv.Serve(l) }()
	return h, nil
}

func (h *eventHook) ch(key string) chan time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, ok := h.arrived[key]
	if !ok {
		c = make(chan time.Time, 1)
		h.arrived[key] = c
	}
	return c
}

func eventFields(url string) *api.UpdatableProjectFields {
	return &api.UpdatableProjectFields{
		EventWebhookUrl:    wrapperspb.String(url),
		EventWebhookEvents: &api.UpdatableProjectFields_EventWebhookEvents{Events: []string{"DocumentRootChanged"}},
	}
}

// editOnce activates a client of c, attaches docKey and pushes one Set;
// it returns when the push is acknowledged.
func editOnce(ctx context.Context, c v1connect.YorkieServiceClient, docKey string) (time.Time, error) {
	s, err := activate(ctx, c, "editor-"+docKey)
	if err != nil {
		return time.Time{}, err
	}
	id, err := attach(ctx, c, s, docKey)
	if err != nil {
		return time.Time{}, err
	}
	s.NewSet("k")
	if _, err := push(ctx, c, s, id); err != nil {
		return time.Time{}, fmt.Errorf("push %s: %w", docKey, err)
	}
	return time.Now(), nil
}

func runEvent(ctx context.Context, t *target, cfg config, logger *slog.Logger) ([]figure, error) {
	dead, err := newSilent()
	if err != nil {
		return nil, err
	}
	defer dead.close()
	hook, err := newEventHook()
	if err != nil {
		return nil, err
	}
	defer hook.srv.Close()
	ap, err := t.project(ctx, "event-attacker", eventFields(dead.url()))
	if err != nil {
		return nil, err
	}
	vp, err := t.project(ctx, "event-victim", eventFields(hook.url))
	if err != nil {
		return nil, err
	}
	attacker, atr := t.yorkie(ap.GetPublicKey())
	defer atr.CloseIdleConnections()
	victim, vtr := t.yorkie(vp.GetPublicKey())
	defer vtr.CloseIdleConnections()

	delay := func(docKey string) (string, error) {
		pushed, err := editOnce(ctx, victim, docKey)
		if err != nil {
			return "", err
		}
		select {
		case at := <-hook.ch(docKey):
			return ms(at.Sub(pushed)), nil
		case <-time.After(cfg.eventWait):
			return fmt.Sprintf("not within %v", cfg.eventWait), nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	quiet, err := delay("victim-quiet")
	if err != nil {
		return nil, err
	}
	for i := range cfg.eventDocs {
		if _, err := editOnce(ctx, attacker, fmt.Sprintf("attacker-%d", i)); err != nil {
			return nil, err
		}
	}
	// The attacker's deliveries have begun once its endpoint is dialled.
	deadline := time.Now().Add(30 * time.Second)
	for dead.accepted.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Second)
	busy := dead.accepted.Load()
	logger.Info("event: attacker deliveries under way", "connections", busy)
	attacked, err := delay("victim-attacked")
	if err != nil {
		return nil, err
	}
	return []figure{
		{"victim's event after its push, no attack", quiet},
		{fmt.Sprintf("victim's event after its push, %d attacker documents posting to a silent endpoint", cfg.eventDocs), attacked},
		{"attacker deliveries in flight when the victim pushed", strconv.FormatInt(busy, 10)},
	}, nil
}

func runTopic(ctx context.Context, t *target, cfg config, logger *slog.Logger) ([]figure, error) {
	c, tr := t.yorkie("")
	defer tr.CloseIdleConnections()
	const channel = "room"
	join := func(key string) (string, error) {
		resp, err := c.ActivateClient(ctx, connect.NewRequest(&api.ActivateClientRequest{ClientKey: key}))
		if err != nil {
			return "", err
		}
		id := resp.Msg.GetClientId()
		if _, err := c.AttachChannel(ctx, connect.NewRequest(&api.AttachChannelRequest{ClientId: id, ChannelKey: channel})); err != nil {
			return "", fmt.Errorf("attach channel: %w", err)
		}
		return id, nil
	}
	watcher, err := join("watcher")
	if err != nil {
		return nil, err
	}
	// The watcher opens its stream on a connection of its own, reads the
	// first message and no more.
	wc, wtr := t.yorkie("")
	wctx, stopWatch := context.WithCancel(ctx)
	defer func() { stopWatch(); wtr.CloseIdleConnections() }()
	stream, err := wc.Watch(wctx, connect.NewRequest(&api.WatchRequest{ClientId: watcher, Resources: []*api.ResourceDescriptor{
		{Resource: &api.ResourceDescriptor_Channel{Channel: &api.ChannelDescriptor{ChannelKey: channel}}},
	}}))
	if err != nil {
		return nil, fmt.Errorf("watch: %w", err)
	}
	if !stream.Receive() {
		return nil, fmt.Errorf("watch: no first message: %w", stream.Err())
	}
	sender, err := join("sender")
	if err != nil {
		return nil, err
	}
	base, err := t.usage(ctx, true)
	if err != nil {
		return nil, err
	}
	topic := strings.Repeat("t", cfg.topicBytes)
	outcomes := map[string]int{}
	for range cfg.topics {
		_, err := c.Broadcast(ctx, connect.NewRequest(&api.BroadcastRequest{ClientId: sender, ChannelKey: channel, Topic: topic, Payload: []byte(`"x"`)}))
		outcomes[code(err)]++
	}
	after, err := t.usage(ctx, true)
	if err != nil {
		return nil, err
	}
	logger.Info("topic: done", "outcomes", outcomes)
	return []figure{
		{fmt.Sprintf("broadcasts with a %d MiB topic", cfg.topicBytes>>20), fmt.Sprintf("%d: %s", cfg.topics, outcomeString(outcomes))},
		{"server heap in use: before / after (after a GC)", fmt.Sprintf("%s / %s", mib(base.heap), mib(after.heap))},
		{"server resident memory: before / after", fmt.Sprintf("%s / %s", mib(base.rss), mib(after.rss))},
	}, nil
}

func runLamport(ctx context.Context, t *target, _ config, _ *slog.Logger) ([]figure, error) {
	c, tr := t.yorkie("")
	defer tr.CloseIdleConnections()
	const doc = "clock-doc"
	a, err := activate(ctx, c, "clock-attacker")
	if err != nil {
		return nil, err
	}
	id, err := attach(ctx, c, a, doc)
	if err != nil {
		return nil, err
	}
	a.Lamport = math.MaxInt64 - 1
	a.NewSet("k")
	_, perr := push(ctx, c, a, id)
	b, err := activate(ctx, c, "clock-editor")
	if err != nil {
		return nil, err
	}
	if _, err := attach(ctx, c, b, doc); err != nil {
		return nil, err
	}
	next := "an SDK client's next change fits int64"
	if b.Lamport == math.MaxInt64 {
		next = "an SDK client's next change needs lamport 2^63: past int64, every PushPull refused"
	}
	return []figure{
		{"push of a change with lamport 2^63-1", fmt.Sprintf("%s %s", code(perr), errinfo.Metadata(perr)["code"])},
		{"lamport a client attaching next pulls", fmt.Sprintf("%d (%s)", b.Lamport, next)},
	}, nil
}

// bomb returns a gzip body of members 16 MiB of zeros each, n bytes in all
// once inflated.
func bomb(n int) ([]byte, error) {
	var member bytes.Buffer
	zw, err := gzip.NewWriterLevel(&member, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	const memberBytes = 16 << 20
	if _, err := zw.Write(make([]byte, memberBytes)); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return bytes.Repeat(member.Bytes(), max(1, n/memberBytes)), nil
}

func runBomb(ctx context.Context, t *target, cfg config, _ *slog.Logger) ([]figure, error) {
	body, err := bomb(cfg.bombBytes)
	if err != nil {
		return nil, err
	}
	base, err := t.usage(ctx, true)
	if err != nil {
		return nil, err
	}
	window, endWindow := context.WithCancel(ctx)
	var peak atomic.Int64
	sampler := worst(window, 20*time.Millisecond, func() (time.Duration, error) {
		u, err := t.usage(ctx, false)
		for {
			old := peak.Load()
			if int64(u.rss) <= old || peak.CompareAndSwap(old, int64(u.rss)) {
				break
			}
		}
		return 0, err
	})
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[string]int{}
	start := make(chan struct{})
	for range cfg.bombs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+t.rpc+"/yorkie.v1.YorkieService/PushPullChanges", bytes.NewReader(body))
			if err != nil {
				return
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Content-Encoding", "gzip")
			req.Header.Set("Connect-Protocol-Version", "1")
			req.Close = true
			resp, err := http.DefaultClient.Do(req)
			key := "transport error"
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				key = strconv.Itoa(resp.StatusCode)
			}
			mu.Lock()
			statuses[key]++
			mu.Unlock()
		}()
	}
	close(start)
	wg.Wait()
	endWindow()
	_, _ = sampler()
	return []figure{
		{"gzip bombs sent at once", fmt.Sprintf("%d of %d KiB, %d MiB inflated: HTTP %s", cfg.bombs, len(body)>>10, cfg.bombBytes>>20, outcomeString(statuses))},
		{"server resident memory: before / peak", fmt.Sprintf("%s / %s", mib(base.rss), mib(float64(peak.Load())))},
	}, nil
}

func runAdmin(ctx context.Context, t *target, cfg config, _ *slog.Logger) ([]figure, error) {
	var figs []figure
	warned := "no"
	for _, line := range strings.Split(t.log.String(), "\n") {
		if strings.Contains(line, "level=WARN") && strings.Contains(strings.ToLower(line), "password") {
			warned = "yes"
		}
	}
	figs = append(figs, figure{"warning at start while admin/admin works", warned})

	// The operators' view of a document of the default project, asked
	// with no credentials.
	c, tr := t.yorkie("")
	defer tr.CloseIdleConnections()
	if _, err := editOnce(ctx, c, "secret-doc"); err != nil {
		return nil, err
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+t.prof+"/admin/documents/secret-doc", nil)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		figs = append(figs, figure{"GET /admin/documents/{key} on the profiling port, no credentials", resp.Status})
	}

	// Password guesses, one after the other.
	outcomes := map[string]int{}
	start := time.Now()
	for range cfg.guesses {
		_, err := t.admin.LogIn(ctx, connect.NewRequest(&api.LogInRequest{Username: "admin", Password: "guess"}))
		outcomes[code(err)]++
	}
	figs = append(figs, figure{"wrong-password LogIn calls, one after the other", fmt.Sprintf("%d in %s: %s", cfg.guesses, ms(time.Since(start)), outcomeString(outcomes))})

	_, err := t.admin.SignUp(ctx, connect.NewRequest(&api.SignUpRequest{Username: "admin", Password: "Passw0rd!long"}))
	figs = append(figs, figure{"SignUp with an existing username: answer", code(err)})

	outcomes = map[string]int{}
	end := time.Now().Add(2 * time.Second)
	for i := 0; time.Now().Before(end); i++ {
		_, err := t.admin.CreateProject(ctx, authorized(t, &api.CreateProjectRequest{Name: fmt.Sprintf("p%d", i)}))
		outcomes[code(err)]++
	}
	figs = append(figs, figure{"CreateProject by one user in 2 s", outcomeString(outcomes)})

	pre, _ := http.NewRequestWithContext(ctx, http.MethodOptions, "http://"+t.rpc+"/yorkie.v1.AdminService/LogIn", nil)
	pre.Header.Set("Origin", "https://evil.example")
	pre.Header.Set("Access-Control-Request-Method", "POST")
	pre.Header.Set("Access-Control-Request-Headers", "authorization,content-type")
	if resp, err := http.DefaultClient.Do(pre); err == nil {
		_ = resp.Body.Close()
		v := resp.Header.Get("Access-Control-Allow-Origin")
		if v == "" {
			v = "(none)"
		}
		figs = append(figs, figure{"AdminService preflight from https://evil.example: Access-Control-Allow-Origin", v})
	}
	return figs, nil
}

func runEventDrop(ctx context.Context, t *target, cfg config, logger *slog.Logger) ([]figure, error) {
	dead, err := newSilent()
	if err != nil {
		return nil, err
	}
	defer dead.close()
	hook, err := newEventHook()
	if err != nil {
		return nil, err
	}
	defer hook.srv.Close()
	ap, err := t.project(ctx, "drop-attacker", eventFields(dead.url()))
	if err != nil {
		return nil, err
	}
	vp, err := t.project(ctx, "drop-victim", eventFields(hook.url))
	if err != nil {
		return nil, err
	}
	attacker, atr := t.yorkie(ap.GetPublicKey())
	defer atr.CloseIdleConnections()
	victim, vtr := t.yorkie(vp.GetPublicKey())
	defer vtr.CloseIdleConnections()

	// Clients edit their share of the documents one after the other, many
	// clients at once; each stays below the attachments a client may hold.
	const perClient = 500
	clients := (cfg.dropDocs + perClient - 1) / perClient
	start := time.Now()
	errs := make(chan error, clients)
	for ci := range clients {
		go func() {
			s, err := activate(ctx, attacker, fmt.Sprintf("dropper-%d", ci))
			if err != nil {
				errs <- err
				return
			}
			for d := ci * perClient; d < min((ci+1)*perClient, cfg.dropDocs); d++ {
				id, err := attach(ctx, attacker, s, fmt.Sprintf("drop-%d", d))
				if err != nil {
					errs <- err
					return
				}
				s.NewSet("k")
				if _, err := push(ctx, attacker, s, id); err != nil {
					errs <- fmt.Errorf("push: %w", err)
					return
				}
			}
			errs <- nil
		}()
	}
	for range clients {
		if err := <-errs; err != nil {
			return nil, err
		}
	}
	took := time.Since(start)
	logger.Info("eventdrop: attacker documents changed", "documents", cfg.dropDocs, "took", took)
	pushed, err := editOnce(ctx, victim, "drop-victim-doc")
	if err != nil {
		return nil, err
	}
	arrived := fmt.Sprintf("dropped: not within %v", cfg.dropWait)
	select {
	case at := <-hook.ch("drop-victim-doc"):
		arrived = "arrived " + ms(at.Sub(pushed)) + " after its push"
	case <-time.After(cfg.dropWait):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	full, victimNamed := 0, 0
	for _, line := range strings.Split(t.log.String(), "\n") {
		if strings.Contains(line, "backlog full") {
			full++
			if strings.Contains(line, vp.GetId()) || strings.Contains(line, "drop-victim") {
				victimNamed++
			}
		}
	}
	return []figure{
		{"attacker documents changed, events to a silent endpoint", fmt.Sprintf("%d in %s", cfg.dropDocs, ms(took))},
		{"victim's event for a change after that", arrived},
		{"server log lines \"backlog full\" (the victim's among them)", fmt.Sprintf("%d (%d)", full, victimNamed)},
	}, nil
}

func runDocView(ctx context.Context, t *target, cfg config, logger *slog.Logger) ([]figure, error) {
	c, tr := t.yorkie("")
	defer tr.CloseIdleConnections()
	const doc = "big-doc"
	s, err := activate(ctx, c, "builder")
	if err != nil {
		return nil, err
	}
	id, err := attach(ctx, c, s, doc)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	const perPack = 1000
	for n := 0; n < cfg.viewOps; n += perPack {
		for i := range min(perPack, cfg.viewOps-n) {
			s.NewSet("k" + strconv.Itoa((n+i)%100))
		}
		if _, err := push(ctx, c, s, id); err != nil {
			return nil, fmt.Errorf("build the document: %w", err)
		}
	}
	built := time.Since(start)
	logger.Info("docview: document built", "operations", cfg.viewOps, "took", built)
	view := func() (time.Duration, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+t.prof+"/admin/documents/"+doc, nil)
		if err != nil {
			return 0, err
		}
		req.Header.Set("Authorization", "Bearer "+t.token)
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("GET the view: %s", resp.Status)
		}
		return time.Since(start), nil
	}
	one, err := view()
	if err != nil {
		return nil, err
	}
	by, err := newBystander(ctx, t)
	if err != nil {
		return nil, err
	}
	defer by.close()
	quiet := by.run(ctx, time.Second)
	base, err := t.usage(ctx, true)
	if err != nil {
		return nil, err
	}
	window, endWindow := context.WithCancel(ctx)
	var peak atomic.Int64
	sampler := worst(window, 20*time.Millisecond, func() (time.Duration, error) {
		u, err := t.usage(ctx, false)
		for {
			old := peak.Load()
			if int64(u.rss) <= old || peak.CompareAndSwap(old, int64(u.rss)) {
				break
			}
		}
		return 0, err
	})
	busy := by.start(ctx)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var slowest time.Duration
	var failed error
	for range cfg.views {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := view()
			mu.Lock()
			defer mu.Unlock()
			slowest = max(slowest, d)
			if err != nil {
				failed = err
			}
		}()
	}
	wg.Wait()
	during := busy()
	endWindow()
	_, _ = sampler()
	if failed != nil {
		return nil, failed
	}
	return []figure{
		{"document built by one anonymous client", fmt.Sprintf("%d operations in %s", cfg.viewOps, ms(built))},
		{"one GET of its view", ms(one)},
		{fmt.Sprintf("%d GETs at once: slowest", cfg.views), ms(slowest)},
		{fmt.Sprintf("server resident memory: before / peak during the %d GETs", cfg.views), fmt.Sprintf("%s / %s", mib(base.rss), mib(float64(peak.Load())))},
		{"a bystander's PushPull on another document, p50 / p99: quiet", quiet.String()},
		{fmt.Sprintf("a bystander's PushPull on another document, p50 / p99: during the %d GETs", cfg.views), during.String()},
	}, nil
}
