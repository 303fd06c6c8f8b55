package project_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/backend/database/memory"
	"github.com/yorkie-affinity/yorkie/server/project"
)

func TestResolver(t *testing.T) {
	ctx := context.Background()
	db := memory.New()
	if _, err := db.EnsureDefaultProject(ctx, "owner"); err != nil {
		t.Fatal(err)
	}
	app, err := db.CreateProject(ctx, "owner", "app")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1000, 0)
	r, err := project.NewResolver(project.ResolverConfig{
		DB: db, UseDefaultProject: true, CacheTTL: time.Minute,
		Now: func() time.Time { return now },
	})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("no key is the default project", func(t *testing.T) {
		p, err := r.Resolve(ctx, "")
		if err != nil || p.ID != database.DefaultProjectID {
			t.Fatalf("Resolve(\"\") = %v, %v; want the default project", p, err)
		}
	})
	t.Run("a public key picks its project", func(t *testing.T) {
		p, err := r.Resolve(ctx, app.PublicKey)
		if err != nil || p.ID != app.ID {
			t.Fatalf("Resolve(public key) = %v, %v; want %s", p, err, app.ID)
		}
	})
	t.Run("the secret key is not a public key", func(t *testing.T) {
		if _, err := r.Resolve(ctx, app.SecretKey); !errors.Is(err, project.ErrUnknownAPIKey) {
			t.Fatalf("Resolve(secret key) error = %v, want ErrUnknownAPIKey", err)
		}
	})
	t.Run("an update is seen once the entry expires", func(t *testing.T) {
		url := "http://hooks.example/x"
		if _, err := db.UpdateProject(ctx, "owner", app.ID, &database.ProjectUpdate{EventWebhookURL: &url}); err != nil {
			t.Fatal(err)
		}
		if p, _ := r.Resolve(ctx, app.PublicKey); p.EventWebhookURL != "" {
			t.Fatalf("cached project changed before its TTL: %q", p.EventWebhookURL)
		}
		now = now.Add(time.Minute)
		if p, _ := r.Resolve(ctx, app.PublicKey); p.EventWebhookURL != url {
			t.Fatalf("after the TTL EventWebhookURL = %q, want %q", p.EventWebhookURL, url)
		}
	})
	t.Run("default project off", func(t *testing.T) {
		off, err := project.NewResolver(project.ResolverConfig{DB: db})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := off.Resolve(ctx, ""); !errors.Is(err, project.ErrAPIKeyRequired) {
			t.Fatalf("Resolve(\"\") error = %v, want ErrAPIKeyRequired", err)
		}
		if p, err := off.Resolve(ctx, app.PublicKey); err != nil || p.ID != app.ID {
			t.Fatalf("Resolve(public key) = %v, %v", p, err)
		}
	})
}

func TestResolverCacheBounded(t *testing.T) {
	ctx := context.Background()
	db := memory.New()
	var keys []string
	for _, name := range []string{"a", "b", "c"} {
		p, err := db.CreateProject(ctx, "owner", name)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, p.PublicKey)
	}
	r, err := project.NewResolver(project.ResolverConfig{DB: db, CacheSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		for _, k := range keys {
			if _, err := r.Resolve(ctx, k); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestScopedKey(t *testing.T) {
	other := "0123456789abcdef01234567"
	for _, c := range []struct{ project, key, want string }{
		{database.DefaultProjectID, "doc", "doc"},
		{other, "doc", other + "/doc"},
		{other, "$channel:room", other + "/$channel:room"},
	} {
		got := project.ScopedKey(c.project, c.key)
		if got != c.want {
			t.Errorf("ScopedKey(%q, %q) = %q, want %q", c.project, c.key, got, c.want)
		}
		if p, k := project.SplitScopedKey(got); p != c.project || k != c.key {
			t.Errorf("SplitScopedKey(%q) = %q, %q", got, p, k)
		}
	}
}

// BenchmarkResolveCached is the cost every call pays for its project once
// the project is cached.
func BenchmarkResolveCached(b *testing.B) {
	ctx := context.Background()
	db := memory.New()
	p, err := db.CreateProject(ctx, "owner", "app")
	if err != nil {
		b.Fatal(err)
	}
	r, err := project.NewResolver(project.ResolverConfig{DB: db, CacheTTL: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := r.Resolve(ctx, p.PublicKey); err != nil {
				b.Fatal(err)
			}
		}
	})
}
