package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/webhook"
	"github.com/yorkie-affinity/yorkie/server/webhook/authwebhook"
	"github.com/yorkie-affinity/yorkie/server/webhook/eventwebhook"
)

// serverWebhookFlags are the server-wide settings of the projects' webhooks,
// under upstream's flag names.
type serverWebhookFlags struct {
	auth, event       policyFlags
	cacheSize         int
	cacheTTL, denyTTL time.Duration
	debounce          time.Duration
	refusePrivate     bool
}

// policyFlags are one webhook's --<name>-webhook-... retry flags.
type policyFlags struct {
	timeout, minWait, maxWait time.Duration
	retries                   int
}

func (p *policyFlags) register(fs *flag.FlagSet, name string) {
	def := webhook.DefaultPolicy()
	fs.DurationVar(&p.timeout, name+"-webhook-request-timeout", def.Timeout, "time one "+name+" webhook request may take")
	fs.IntVar(&p.retries, name+"-webhook-max-retries", def.MaxRetries, "times a failed "+name+" webhook request is repeated")
	fs.DurationVar(&p.minWait, name+"-webhook-min-wait-interval", def.MinBackoff, "wait before the first retry of a "+name+" webhook request; it doubles on each retry")
	fs.DurationVar(&p.maxWait, name+"-webhook-max-wait-interval", def.MaxBackoff, "longest wait between "+name+" webhook retries")
}

func (p *policyFlags) policy(name string) (webhook.Policy, error) {
	pol := webhook.Policy{Timeout: p.timeout, MaxRetries: p.retries, MinBackoff: p.minWait, MaxBackoff: p.maxWait}
	if err := pol.Validate(); err != nil {
		return webhook.Policy{}, fmt.Errorf("--%s-webhook-...: %w", name, err)
	}
	return pol, nil
}

func serverWebhookFlagSet(fs *flag.FlagSet) *serverWebhookFlags {
	f := &serverWebhookFlags{}
	f.auth.register(fs, "auth")
	f.event.register(fs, "event")
	fs.IntVar(&f.cacheSize, "auth-webhook-cache-size", authwebhook.DefaultCacheSize, "auth webhook answers kept, allowed and denied each (negative: none)")
	for _, name := range []string{"auth-webhook-cache-auth-ttl", "auth-webhook-cache-ttl"} {
		fs.DurationVar(&f.cacheTTL, name, authwebhook.DefaultAllowedTTL, "how long an allowed auth webhook answer is kept")
	}
	fs.DurationVar(&f.denyTTL, "auth-webhook-cache-unauth-ttl", authwebhook.DefaultDeniedTTL, "how long a denied auth webhook answer is kept")
	fs.DurationVar(&f.debounce, "event-webhook-debounce", eventwebhook.DefaultDebounce, "quiet time after a document's last change before its event webhook is called")
	for _, name := range []string{"webhook-refuse-private-addresses", "backend-enable-webhook-validation"} {
		fs.BoolVar(&f.refusePrivate, name, true, "refuse webhooks whose address is loopback, private, link-local or otherwise not public (false allows them, e.g. a webhook on the same host)")
	}
	return f
}

func (f *serverWebhookFlags) config() (server.WebhookConfig, error) {
	auth, err := f.auth.policy("auth")
	if err != nil {
		return server.WebhookConfig{}, err
	}
	event, err := f.event.policy("event")
	if err != nil {
		return server.WebhookConfig{}, err
	}
	if f.cacheTTL <= 0 || f.denyTTL <= 0 || f.debounce <= 0 {
		return server.WebhookConfig{}, fmt.Errorf("--auth-webhook-cache-auth-ttl, --auth-webhook-cache-unauth-ttl and --event-webhook-debounce must be positive")
	}
	return server.WebhookConfig{
		AuthPolicy:             auth,
		AuthCacheSize:          f.cacheSize,
		AuthCacheTTL:           f.cacheTTL,
		AuthDeniedCacheTTL:     f.denyTTL,
		EventPolicy:            event,
		EventDebounce:          f.debounce,
		RefusePrivateAddresses: f.refusePrivate,
	}, nil
}
