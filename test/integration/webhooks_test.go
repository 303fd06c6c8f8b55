package integration_test

import (
	"context"
	"crypto/hmac"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/backend/database/memory"
	"github.com/yorkie-affinity/yorkie/server/clustertest"
	"github.com/yorkie-affinity/yorkie/server/routing"
	"github.com/yorkie-affinity/yorkie/server/servertest"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
	"github.com/yorkie-affinity/yorkie/server/webhook"
	"github.com/yorkie-affinity/yorkie/server/webhook/eventwebhook"
	"github.com/yorkie-affinity/yorkie/server/webhook/webhooktest"
)

// authRequest is what an auth webhook receives, in upstream's format.
type authRequest struct {
	Token      string `json:"token"`
	Method     string `json:"method"`
	Attributes []struct {
		Key  string `json:"key"`
		Verb string `json:"verb"`
	} `json:"attributes"`
}

// authHook is an auth webhook service on a real TCP port: decide answers
// each request, and every request is kept.
type authHook struct {
	srv    *httptest.Server
	mu     sync.Mutex
	asked  []authRequest
	decide func(authRequest) (int, string)
}

func newAuthHook(t *testing.T, decide func(authRequest) (int, string)) *authHook {
	h := &authHook{decide: decide}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req authRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			t.Errorf("auth webhook got a body that is not upstream's JSON: %v", err)
		}
		h.mu.Lock()
		h.asked = append(h.asked, req)
		h.mu.Unlock()
		status, body := h.decide(req)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *authHook) requests() []authRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]authRequest(nil), h.asked...)
}

// count returns how many requests named method.
func (h *authHook) count(method string) int {
	n := 0
	for _, r := range h.requests() {
		if r.Method == method {
			n++
		}
	}
	return n
}

// allowAllowed allows documents whose key starts with "allowed" and denies
// the others, as a user's webhook deciding per document would.
func allowAllowed(r authRequest) (int, string) {
	for _, a := range r.Attributes {
		if !strings.HasPrefix(a.Key, "allowed") {
			return http.StatusForbidden, `{"allowed":false,"reason":"not your document"}`
		}
	}
	return http.StatusOK, `{"allowed":true}`
}

var guarded = []string{"ActivateClient", "DeactivateClient", "AttachDocument", "DetachDocument", "RemoveDocument", "PushPull", "Watch"}

// setDefaultProject changes the default project's webhook settings in db,
// as UpdateProject of the admin API does, before any call reads them.
func setDefaultProject(t *testing.T, db database.Database, u *database.ProjectUpdate) *database.ProjectInfo {
	t.Helper()
	ctx := context.Background()
	p, err := db.FindProjectByID(ctx, database.DefaultProjectID)
	if err != nil {
		t.Fatalf("default project: %v", err)
	}
	p, err = db.UpdateProject(ctx, p.Owner, p.ID, u)
	if err != nil {
		t.Fatalf("update default project: %v", err)
	}
	return p
}

func authSettings(url string, methods ...string) *database.ProjectUpdate {
	return &database.ProjectUpdate{AuthWebhookURL: &url, AuthWebhookMethods: &methods}
}

// tokenClient is a client whose calls carry the token it holds now in the
// authorization header, as the SDK's authTokenInjector sets it.
type tokenClient struct {
	token atomic.Value
}

func (tc *tokenClient) option() connect.ClientOption {
	return connect.WithInterceptors(connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			if tok, _ := tc.token.Load().(string); tok != "" {
				req.Header().Set("Authorization", tok)
			}
			return next(ctx, req)
		}
	}))
}

// startWithDB starts a server on its own memory database, returned for
// setting the default project up.
func startWithDB(t *testing.T, opts ...func(*server.Config)) (*server.Server, database.Database) {
	db := memory.New()
	t.Cleanup(func() { _ = db.Close(context.Background()) })
	srv := servertest.Start(t, append([]func(*server.Config){func(c *server.Config) { c.DB = db }}, opts...)...)
	return srv, db
}

func TestAuthWebhookAllowsOneDocumentAndDeniesAnother(t *testing.T) {
	hook := newAuthHook(t, allowAllowed)
	srv, db := startWithDB(t)
	setDefaultProject(t, db, authSettings(hook.srv.URL, guarded...))
	tc := &tokenClient{}
	tc.token.Store("user-1")
	c := servertest.Client(t, srv, servertest.ConnectJSON, tc.option())
	ctx := wire.Context(t)

	r := newReplica(t, c)
	r.MustAttach("allowed-doc")
	r.Edit(2)
	r.MustPushPull()

	denied := wire.NewReplica(t, c)
	_, err := denied.Attach(ctx, "secret-doc")
	wantError(t, err, connect.CodePermissionDenied, "ErrPermissionDenied")
	if wire.ErrorInfo(err)["reason"] != "not your document" {
		t.Fatalf("denial %v does not carry the webhook's reason", err)
	}

	var push *authRequest
	for _, req := range hook.requests() {
		if req.Token != "user-1" {
			t.Fatalf("webhook got token %q, want the authorization header", req.Token)
		}
		if req.Method == "PushPull" && push == nil {
			push = &req
		}
	}
	if push == nil || len(push.Attributes) != 1 || push.Attributes[0].Key != "allowed-doc" || push.Attributes[0].Verb != "rw" {
		t.Fatalf("PushPull asked %+v, want the document's key (resolved from its ID) with rw", push)
	}
	// The second activation is the same question: the cache answers it.
	if hook.count("ActivateClient") != 1 || hook.count("AttachDocument") != 2 {
		t.Fatalf("webhook asked %+v", hook.requests())
	}
}

func TestAuthWebhookUnauthenticatedTokenIsRefreshed(t *testing.T) {
	hook := newAuthHook(t, func(r authRequest) (int, string) {
		if r.Token == "expired" {
			return http.StatusUnauthorized, `{"allowed":false,"reason":"token expired"}`
		}
		return http.StatusOK, `{"allowed":true}`
	})
	srv, db := startWithDB(t)
	setDefaultProject(t, db, authSettings(hook.srv.URL, "PushPull"))
	tc := &tokenClient{}
	tc.token.Store("fresh")
	c := servertest.Client(t, srv, servertest.ConnectJSON, tc.option())
	r := newReplica(t, c)
	r.MustAttach(wire.UniqueKey(t, "doc"))
	r.Edit(1)

	tc.token.Store("expired")
	_, err := r.PushPull(wire.Context(t))
	wantError(t, err, connect.CodeUnauthenticated, "ErrUnauthenticated")
	if wire.ErrorInfo(err)["reason"] != "token expired" {
		t.Fatalf("%v does not carry the reason authTokenInjector is given", err)
	}
	// The SDK asks for a new token and sends the same pack again.
	tc.token.Store("fresh")
	pack := r.MustPushPull()
	if pack.GetCheckpoint().GetClientSeq() != 2 {
		t.Fatalf("retried pack acknowledged up to %d, want 2", pack.GetCheckpoint().GetClientSeq())
	}
	// Unguarded methods never reach the webhook; an unauthenticated answer
	// is not cached, so the retry asked again.
	if n := len(hook.requests()); n != hook.count("PushPull") || n < 2 {
		t.Fatalf("webhook asked %+v", hook.requests())
	}
}

func TestAuthWebhookDownFailsClosed(t *testing.T) {
	hook := newAuthHook(t, allowAllowed)
	url := hook.srv.URL
	hook.srv.Close()
	srv, db := startWithDB(t, func(c *server.Config) {
		c.Webhooks.AuthPolicy = webhook.Policy{Timeout: 100 * time.Millisecond, MaxRetries: 2, MinBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond}
	})
	setDefaultProject(t, db, authSettings(url, "ActivateClient"))
	c := servertest.Client(t, srv, servertest.ConnectJSON)
	_, err := wire.Activate(wire.Context(t), c, "key")
	wantError(t, err, connect.CodeInternal, "ErrWebhookTimeout")
}

func TestAuthWebhookEmptyMethodsGuardNothing(t *testing.T) {
	hook := newAuthHook(t, func(authRequest) (int, string) {
		return http.StatusForbidden, `{"allowed":false}`
	})
	srv, db := startWithDB(t)
	setDefaultProject(t, db, authSettings(hook.srv.URL))
	r := newReplica(t, servertest.Client(t, srv, servertest.ConnectProto))
	r.MustAttach("secret-doc")
	if n := len(hook.requests()); n != 0 {
		t.Fatalf("webhook asked %d times with no methods configured", n)
	}
}

// eventHook is an event webhook service checking each post's signature
// with the project's secret key, as a user's service would.
type eventHook struct {
	srv   *httptest.Server
	posts chan eventwebhook.Body
	bad   chan string
}

func newEventHook(t *testing.T, secret func() string) *eventHook {
	h := &eventHook{posts: make(chan eventwebhook.Body, 100), bad: make(chan string, 100)}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		if got, want := r.Header.Get("X-Signature-256"), eventwebhook.Sign(secret(), raw); !hmac.Equal([]byte(got), []byte(want)) {
			h.bad <- "signature " + got
		}
		var b eventwebhook.Body
		if err := json.Unmarshal(raw, &b); err != nil {
			h.bad <- "body " + string(raw)
		}
		h.posts <- b
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *eventHook) await(t *testing.T) eventwebhook.Body {
	t.Helper()
	select {
	case b := <-h.posts:
		select {
		case bad := <-h.bad:
			t.Fatalf("event webhook post failed the receiver's check: %s", bad)
		default:
		}
		return b
	case <-time.After(30 * time.Second): // a hang guard, not a synchronisation
		t.Fatal("no event webhook post")
		return eventwebhook.Body{}
	}
}

func TestEventWebhookPostsOncePerBurstSigned(t *testing.T) {
	var secret atomic.Value
	secret.Store("")
	hook := newEventHook(t, func() string { return secret.Load().(string) })
	clk := webhooktest.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	srv, db := startWithDB(t, func(c *server.Config) {
		c.Webhooks.Clock = clk
		c.Webhooks.EventDebounce = time.Second
	})
	url, events := hook.srv.URL, []string{"DocumentRootChanged"}
	p := setDefaultProject(t, db, &database.ProjectUpdate{EventWebhookURL: &url, EventWebhookEvents: &events})
	secret.Store(p.SecretKey)

	c := servertest.Client(t, srv, servertest.ConnectJSON)
	key := wire.UniqueKey(t, "doc")
	r := newReplica(t, c)
	r.MustAttach(key) // presence only: not a root change
	for range 3 {
		r.Edit(2)
		r.MustPushPull()
	}
	if n := clk.Pending(); n != 1 {
		t.Fatalf("%d events scheduled for one burst", n)
	}
	clk.Advance(time.Second)
	b := hook.await(t)
	if b.Type != "DocumentRootChanged" || b.Attributes.Key != key || b.Attributes.IssuedAt != "2026-01-02T03:04:06.000Z" {
		t.Fatalf("event %+v, want upstream's DocumentRootChanged of %q", b, key)
	}
	// A later edit, a marker, gives exactly one more post: the burst gave one.
	r.Edit(1)
	r.MustPushPull()
	if n := clk.Pending(); n != 1 {
		t.Fatalf("%d events scheduled for the marker edit", n)
	}
	clk.Advance(time.Second)
	hook.await(t)
}

// countingHook counts auth webhook calls per method, allowing everything.
func countingHook(t *testing.T) *authHook {
	return newAuthHook(t, func(authRequest) (int, string) { return http.StatusOK, `{"allowed":true}` })
}

func TestAuthWebhookOncePerCallInACluster(t *testing.T) {
	for _, mode := range []routing.Mode{routing.Forward, routing.Redirect} {
		t.Run(string(mode), func(t *testing.T) {
			hook := countingHook(t)
			cl := clustertest.Start(t, 3, clustertest.WithMode(mode), clustertest.WithConfig(func(_ int, c *server.Config) {
				c.Webhooks.AuthCacheSize = -1 // every call asks
			}))
			setDefaultProject(t, cl.DB(), authSettings(hook.srv.URL, "AttachDocument", "PushPull", "DetachDocument"))
			key := wire.UniqueKey(t, "doc")
			// The first attach binds the document to its owner.
			newReplica(t, cl.Node(0).ConnectProto()).MustAttach(key)
			calls := 1
			own, err := cl.OwnerOf(wire.Context(t), key)
			wire.Must(t, err, "owner")
			for _, n := range cl.Nodes() {
				r := wire.NewReplica(t, n.ConnectProto())
				// Attaches go to the owner even in redirect mode.
				r.MustAttach(key)
				calls++
				r.Edit(1)
				_, err := r.PushPull(wire.Context(t))
				if mode == routing.Redirect && n != own.Node {
					// Refused before the webhook; the client goes to the owner.
					wantError(t, err, connect.CodeUnavailable, "ErrWrongNode")
					r.C = own.Node.ConnectProto()
					_, err = r.PushPull(wire.Context(t))
				}
				wire.Must(t, err, "push pull")
				calls++
			}
			if got := hook.count("AttachDocument") + hook.count("PushPull"); got != calls {
				t.Fatalf("webhook asked %d times for %d calls: %+v", got, calls, hook.requests())
			}
		})
	}
}

// BenchmarkPushPullAuthWebhook measures what guarding PushPull with an auth
// webhook costs the server once its answer is cached, against a server
// without one (today's), in one run: two child servers, one of each, take
// turns call by call, so that the load of a busy machine falls on both
// alike. Each gets the same client (Connect JSON with the SDK's headers and
// a token); their server CPU and wall time per PushPull are reported apart,
// with the ratio of their CPU.
func BenchmarkPushPullAuthWebhook(b *testing.B) {
	var asked atomic.Int64
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		asked.Add(1)
		_, _ = io.WriteString(w, `{"allowed":true}`)
	}))
	b.Cleanup(hook.Close)
	type side struct {
		pid     int
		r       *wire.Replica
		cpu     time.Duration
		elapsed time.Duration
	}
	start := func(env ...string) *side {
		addr, pid := startChildServer(b, "", env...)
		tc := &tokenClient{}
		tc.token.Store("bench-token")
		c := v1connect.NewYorkieServiceClient(servertest.HTTPClient(b, servertest.ConnectJSON), "http://"+addr,
			append(servertest.ConnectJSON.ClientOptions(), connect.WithInterceptors(sdkHeaders{}), tc.option())...)
		r := newReplica(b, c)
		r.MustAttach(wire.UniqueKey(b, "doc"))
		return &side{pid: pid, r: r}
	}
	sides := []*side{start(), start(childAuthWebhookEnv + "=" + hook.URL)}
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		for _, sd := range sides {
			sd.r.Edit(1)
			cpu, t0 := childCPU(b, sd.pid), time.Now()
			if _, err := sd.r.PushPull(ctx); err != nil {
				b.Fatalf("pushpull: %v", err)
			}
			sd.elapsed += time.Since(t0)
			sd.cpu += childCPU(b, sd.pid) - cpu
		}
	}
	b.StopTimer()
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N) }
	b.ReportMetric(per(sides[0].cpu)/1e3, "none-server-cpu-us/op")
	b.ReportMetric(per(sides[1].cpu)/1e3, "webhook-server-cpu-us/op")
	b.ReportMetric(per(sides[0].elapsed), "none-ns/op")
	b.ReportMetric(per(sides[1].elapsed), "webhook-ns/op")
	if sides[0].cpu > 0 {
		b.ReportMetric(float64(sides[1].cpu)/float64(sides[0].cpu), "cpu-ratio")
	}
	// Once, then once per cache TTL.
	b.ReportMetric(float64(asked.Swap(0)), "webhook-requests")
}

func TestAuthWebhookNotSkippedForAForgedForwardMark(t *testing.T) {
	hook := newAuthHook(t, func(authRequest) (int, string) {
		return http.StatusForbidden, `{"allowed":false,"reason":"no"}`
	})
	srv, db := startWithDB(t)
	setDefaultProject(t, db, authSettings(hook.srv.URL, "ActivateClient"))
	forge := connect.WithInterceptors(connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			req.Header().Set(routing.HeaderForwardedBy, "127.0.0.1:1")
			req.Header().Set(routing.HeaderSecret, "guessed")
			return next(ctx, req)
		}
	}))
	_, err := wire.Activate(wire.Context(t), servertest.Client(t, srv, servertest.ConnectJSON, forge), "key")
	wantError(t, err, connect.CodePermissionDenied, "ErrPermissionDenied")
	if hook.count("ActivateClient") != 1 {
		t.Fatalf("webhook asked %+v", hook.requests())
	}
}

func TestEventWebhookPostedByTheOwnerOnlyInACluster(t *testing.T) {
	var secret atomic.Value
	secret.Store("")
	hook := newEventHook(t, func() string { return secret.Load().(string) })
	clk := webhooktest.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	cl := clustertest.Start(t, 3, clustertest.WithConfig(func(_ int, c *server.Config) {
		c.Webhooks.Clock = clk
		c.Webhooks.EventDebounce = time.Second
	}))
	url, events := hook.srv.URL, []string{"DocumentRootChanged"}
	p := setDefaultProject(t, cl.DB(), &database.ProjectUpdate{EventWebhookURL: &url, EventWebhookEvents: &events})
	secret.Store(p.SecretKey)
	key := wire.UniqueKey(t, "doc")
	// Edits through every node: the two that do not own the document
	// forward them to the owner, which alone stores them and posts.
	for _, n := range cl.Nodes() {
		r := newReplica(t, n.ConnectProto())
		r.MustAttach(key)
		r.Edit(1)
		r.MustPushPull()
	}
	// Storing changes schedules their event before PushPull answers: one
	// timer is one node (the owner) scheduling one event for the burst.
	if n := clk.Pending(); n != 1 {
		t.Fatalf("%d events scheduled for one burst of one document", n)
	}
	clk.Advance(time.Second)
	if b := hook.await(t); b.Attributes.Key != key {
		t.Fatalf("event %+v, want one of %q", b, key)
	}
}

func TestWebhooksAreThoseOfTheCallsProject(t *testing.T) {
	hook := newAuthHook(t, func(r authRequest) (int, string) {
		if r.Attributes[0].Key == "shared" {
			return http.StatusForbidden, `{"allowed":false,"reason":"not in this project"}`
		}
		return http.StatusOK, `{"allowed":true}`
	})
	var secret atomic.Value
	secret.Store("")
	events := newEventHook(t, func() string { return secret.Load().(string) })
	clk := webhooktest.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	cl := clustertest.Start(t, 3, clustertest.WithConfig(func(_ int, c *server.Config) { c.Webhooks.Clock = clk }))
	ctx := context.Background()
	def, err := cl.DB().FindProjectByID(ctx, database.DefaultProjectID)
	wire.Must(t, err, "default project")
	app, err := cl.DB().CreateProject(ctx, def.Owner, "app")
	wire.Must(t, err, "create project")
	url, methods, evs := hook.srv.URL, []string{"AttachDocument"}, []string{"DocumentRootChanged"}
	eventURL := events.srv.URL
	app, err = cl.DB().UpdateProject(ctx, def.Owner, app.ID, &database.ProjectUpdate{
		AuthWebhookURL: &url, AuthWebhookMethods: &methods, EventWebhookURL: &eventURL, EventWebhookEvents: &evs,
	})
	wire.Must(t, err, "update project")
	secret.Store(app.SecretKey)
	withKey := connect.WithInterceptors(connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			req.Header().Set("X-Api-Key", app.PublicKey)
			return next(ctx, req)
		}
	}))

	// The default project has no webhook: its calls go through.
	newReplica(t, cl.Node(0).ConnectProto()).MustAttach("shared")
	// The project's webhook refuses its attaches, on every node.
	for _, n := range cl.Nodes() {
		r := newReplica(t, n.Client(servertest.ConnectProto, withKey))
		_, err := r.Attach(wire.Context(t), "shared")
		wantError(t, err, connect.CodePermissionDenied, "ErrPermissionDenied")
	}
	if got := hook.count("AttachDocument"); got != 3 {
		t.Fatalf("the project's webhook asked %d times for 3 attaches", got)
	}

	// Its event webhook hears of its documents, from their owner, signed
	// with its secret key; the default project's edits send nothing.
	key := wire.UniqueKey(t, "doc")
	for _, n := range cl.Nodes() {
		r := newReplica(t, n.Client(servertest.ConnectProto, withKey))
		r.MustAttach(key)
		r.Edit(1)
		r.MustPushPull()
		d := newReplica(t, n.ConnectProto())
		d.MustAttach(key)
		d.Edit(1)
		d.MustPushPull()
	}
	if n := clk.Pending(); n != 1 {
		t.Fatalf("%d events scheduled, want one for the project's document", n)
	}
	clk.Advance(time.Hour)
	if b := events.await(t); b.Attributes.Key != key {
		t.Fatalf("event %+v, want one of %q", b, key)
	}
}
