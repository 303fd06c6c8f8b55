package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/routing"
	"github.com/yorkie-affinity/yorkie/server/rpc"
	"github.com/yorkie-affinity/yorkie/server/webhook"
	"github.com/yorkie-affinity/yorkie/server/webhook/authwebhook"
	"github.com/yorkie-affinity/yorkie/server/webhook/eventwebhook"
)

// WebhookConfig holds the server-wide settings of the projects' webhooks;
// each project names its own URLs, methods and events.
type WebhookConfig struct {
	// AuthPolicy bounds each auth webhook call (zero: webhook.DefaultPolicy,
	// upstream's 3 s per attempt, 10 retries from 100 ms doubling to 3 s).
	AuthPolicy webhook.Policy
	// AuthCacheSize bounds the cached auth answers, allowed and denied each
	// (0: authwebhook.DefaultCacheSize; negative: no cache).
	AuthCacheSize int
	// AuthCacheTTL is how long an allowed answer is kept (0: 10 s).
	AuthCacheTTL time.Duration
	// AuthDeniedCacheTTL is how long a denied answer is kept (0: 10 s).
	AuthDeniedCacheTTL time.Duration
	// EventPolicy bounds each event webhook delivery (zero:
	// webhook.DefaultPolicy).
	EventPolicy webhook.Policy
	// EventDebounce is the quiet time after a document's last change before
	// its event is posted (0: eventwebhook.DefaultDebounce, upstream's 1 s).
	EventDebounce time.Duration
	// RefusePrivateAddresses refuses webhooks whose address, once resolved,
	// is loopback, private, link-local or otherwise not public, so a
	// project's settings cannot reach the server's own network.
	RefusePrivateAddresses bool
	// Clock drives the answer cache, debouncing and retry waits (nil: the
	// wall clock); tests move it by hand.
	Clock webhook.Clock
	// OnEventDelivery, when set, is told of every event delivery once it
	// has ended (tests await deliveries with it).
	OnEventDelivery func(eventwebhook.Delivery)
}

// webhooks is the server's side of both webhooks.
type webhooks struct {
	auth        *authwebhook.Client
	authPolicy  webhook.Policy
	events      *eventwebhook.Sender
	eventPolicy webhook.Policy
	logger      *slog.Logger
}

func orPolicy(p webhook.Policy) webhook.Policy {
	if p == (webhook.Policy{}) {
		return webhook.DefaultPolicy()
	}
	return p
}

func newWebhooks(cfg WebhookConfig, logger *slog.Logger, reg prometheus.Registerer) (*webhooks, error) {
	client := webhook.NewHTTPClient(webhook.HTTPClientConfig{RefusePrivate: cfg.RefusePrivateAddresses})
	auth, err := authwebhook.New(authwebhook.Config{
		HTTPClient:       client,
		Clock:            cfg.Clock,
		AllowedCacheSize: cfg.AuthCacheSize,
		AllowedTTL:       cfg.AuthCacheTTL,
		DeniedCacheSize:  cfg.AuthCacheSize,
		DeniedTTL:        cfg.AuthDeniedCacheTTL,
		Logger:           logger,
		Registerer:       reg,
	})
	if err != nil {
		return nil, fmt.Errorf("server: auth webhook: %w", err)
	}
	events, err := eventwebhook.New(eventwebhook.Config{
		HTTPClient: client,
		Clock:      cfg.Clock,
		Debounce:   cfg.EventDebounce,
		Logger:     logger,
		Registerer: reg,
		OnDelivery: cfg.OnEventDelivery,
	})
	if err != nil {
		return nil, fmt.Errorf("server: event webhook: %w", err)
	}
	return &webhooks{
		auth:        auth,
		authPolicy:  orPolicy(cfg.AuthPolicy),
		events:      events,
		eventPolicy: orPolicy(cfg.EventPolicy),
		logger:      logger,
	}, nil
}

// rpcAuth is the RPC layer's access to the auth webhooks. forwarded tells
// the calls another node of the cluster passed on (nil: none are).
func (w *webhooks) rpcAuth(forwarded func(http.Header) bool) *rpc.Auth {
	return &rpc.Auth{
		Client:    w.auth,
		Policy:    func(p *database.ProjectInfo) webhook.Policy { return projectPolicy(w.authPolicy, p.AuthWebhook) },
		Forwarded: forwarded,
	}
}

// projectPolicy is the server's policy with the project's own settings, as
// UpdateProject stored them, where it has them (zero or empty: the flag's).
func projectPolicy(base webhook.Policy, ws database.WebhookSettings) webhook.Policy {
	p := base
	if ws.MaxRetries > 0 {
		p.MaxRetries = int(min(ws.MaxRetries, 1000))
	}
	for _, f := range []struct {
		dst *time.Duration
		src string
	}{
		{&p.MinBackoff, ws.MinWaitInterval},
		{&p.MaxBackoff, ws.MaxWaitInterval},
		{&p.Timeout, ws.RequestTimeout},
	} {
		if f.src == "" {
			continue
		}
		if d, err := time.ParseDuration(f.src); err == nil && d > 0 {
			*f.dst = d
		}
	}
	if p.Validate() != nil {
		return base // min above max: the project's pair does not hold with the flag's
	}
	return p
}

// rootChanged is the backend's OnRootChanged: the owner of a document of
// project p reports its edits to the project's event webhook, debounced per
// document.
func (w *webhooks) rootChanged(_ context.Context, p *database.ProjectInfo, docKey string) {
	// As upstream: an empty list of events sends none.
	if p == nil || p.EventWebhookURL == "" || !slices.Contains(p.EventWebhookEvents, eventwebhook.DocumentRootChanged) {
		return
	}
	w.events.DocumentChanged(p.ID, docKey, eventwebhook.Target{
		URL:        p.EventWebhookURL,
		SigningKey: p.SecretKey,
		Policy:     projectPolicy(w.eventPolicy, p.EventWebhook),
	})
}

// close posts the events still waiting and waits for them within ctx.
func (w *webhooks) close(ctx context.Context) error {
	return w.events.Close(ctx)
}

// forwardedBy reports whether h marks a call forwarded by a node holding the
// cluster secret.
func forwardedBy(h http.Header, authentic func(http.Header) bool) bool {
	return h.Get(routing.HeaderForwardedBy) != "" && authentic(h)
}
