package project

import (
	"context"
	"testing"
	"time"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/backend/database/memory"
)

func TestDefaultsReadsTheDefaultProjectOncePerRefresh(t *testing.T) {
	ctx := context.Background()
	db := memory.New()
	p, err := db.EnsureDefaultProject(ctx, "owner")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(0, 0)
	d := NewDefaults(db, time.Minute)
	d.now = func() time.Time { return now }
	if got, err := d.Of(ctx); err != nil || got.ID != database.DefaultProjectID {
		t.Fatalf("Of = %+v, %v", got, err)
	}
	url := "http://hook.example/"
	if _, err := db.UpdateProject(ctx, p.Owner, p.ID, &database.ProjectUpdate{AuthWebhookURL: &url}); err != nil {
		t.Fatal(err)
	}
	if got, _ := d.Of(ctx); got.AuthWebhookURL != "" {
		t.Fatalf("read again within the refresh period: %+v", got)
	}
	now = now.Add(time.Minute)
	if got, _ := d.Of(ctx); got.AuthWebhookURL != url {
		t.Fatalf("not read again after the refresh period: %+v", got)
	}
	own := &database.ProjectInfo{ID: "aaaaaaaaaaaaaaaaaaaaaaaa"}
	if got, _ := d.Of(NewContext(ctx, own)); got != own {
		t.Fatalf("Of = %+v, want the context's project", got)
	}
}

func TestDefaultsWithoutADefaultProjectHasNoWebhooks(t *testing.T) {
	got, err := NewDefaults(memory.New(), 0).Of(context.Background())
	if err != nil || got.ID != database.DefaultProjectID || got.AuthWebhookURL != "" || got.EventWebhookURL != "" {
		t.Fatalf("Of = %+v, %v", got, err)
	}
}
