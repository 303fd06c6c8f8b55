package server

import (
	"testing"
	"time"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/webhook"
)

func TestProjectPolicyOverridesTheFlagsWhereSet(t *testing.T) {
	base := webhook.DefaultPolicy()
	if got := projectPolicy(base, database.WebhookSettings{}); got != base {
		t.Fatalf("no project settings: %+v, want the flags' %+v", got, base)
	}
	got := projectPolicy(base, database.WebhookSettings{MaxRetries: 2, MinWaitInterval: "10ms", MaxWaitInterval: "20ms", RequestTimeout: "1s"})
	want := webhook.Policy{Timeout: time.Second, MaxRetries: 2, MinBackoff: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond}
	if got != want {
		t.Fatalf("project settings: %+v, want %+v", got, want)
	}
	if got := projectPolicy(base, database.WebhookSettings{MinWaitInterval: "1h"}); got != base {
		t.Fatalf("a minimum above the flag's maximum: %+v, want the flags'", got)
	}
}
