// Package webhook holds what the auth and event webhooks share: one retried
// HTTP POST with a bounded backoff, an HTTP client that can refuse private
// addresses at dial time, and the clock both run on. The webhooks themselves
// live in the authwebhook and eventwebhook packages below this one.
package webhook
