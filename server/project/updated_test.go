package project_test

import (
	"context"
	"testing"
	"time"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/backend/database/memory"
	"github.com/yorkie-affinity/yorkie/server/project"
)

// TestResolverUpdated: an update this node served replaces its cached
// copies of the project, under every key they were looked up by, at once.
func TestResolverUpdated(t *testing.T) {
	ctx := context.Background()
	db := memory.New()
	def, err := db.EnsureDefaultProject(ctx, "owner")
	if err != nil {
		t.Fatal(err)
	}
	app, err := db.CreateProject(ctx, "owner", "app")
	if err != nil {
		t.Fatal(err)
	}
	r, err := project.NewResolver(project.ResolverConfig{DB: db, UseDefaultProject: true, CacheTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"", app.PublicKey} {
		if _, err := r.Resolve(ctx, key); err != nil {
			t.Fatal(err)
		}
	}
	limit := 3
	updated, err := db.UpdateProject(ctx, "owner", def.ID, &database.ProjectUpdate{MaxAttachmentsPerDocument: &limit})
	if err != nil {
		t.Fatal(err)
	}
	r.Updated(updated)
	if p, _ := r.Resolve(ctx, ""); p.MaxAttachmentsPerDocument != 3 {
		t.Fatalf("default project after Updated: %d attachments, want 3", p.MaxAttachmentsPerDocument)
	}
	if p, _ := r.Resolve(ctx, app.PublicKey); p.ID != app.ID || p.MaxAttachmentsPerDocument != 0 {
		t.Fatalf("another project after Updated: %+v", p)
	}
}
