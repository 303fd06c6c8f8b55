package dbtest

import (
	"maps"
	"slices"
	"sync"
	"testing"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// testAccounts checks users, projects and secrets: uniqueness of names and
// keys, scoping of projects by owner, updates, and agreement of two handles
// (two nodes) on the default project and on a secret.
func testAccounts(t *testing.T, newPair NewPair) {
	t.Run("Users", func(t *testing.T) {
		db, _ := newPair(t)
		ctx := testCtx(t)
		u := must(db.CreateUser(ctx, "ada", "hash-1")).get(t)
		if !idPattern.MatchString(u.ID) || u.Username != "ada" || u.HashedPassword != "hash-1" || u.CreatedAt.IsZero() {
			t.Fatalf("created user %+v", u)
		}
		_, err := db.CreateUser(ctx, "ada", "hash-2")
		wantErr(t, err, database.ErrUserAlreadyExists, "second user with the name")
		got := must(db.FindUserByName(ctx, "ada")).get(t)
		if got.ID != u.ID || got.HashedPassword != "hash-1" {
			t.Fatalf("found user %+v, want %+v", got, u)
		}
		_, err = db.FindUserByName(ctx, "bob")
		wantErr(t, err, database.ErrUserNotFound, "unknown user")
	})

	t.Run("Projects", func(t *testing.T) {
		db, other := newPair(t)
		ctx := testCtx(t)
		owner, stranger := unknownID(), unknownID()
		p := must(db.CreateProject(ctx, owner, "app")).get(t)
		if !idPattern.MatchString(p.ID) || p.Name != "app" || p.Owner != owner || p.CreatedAt.IsZero() || !p.UpdatedAt.Equal(p.CreatedAt) {
			t.Fatalf("created project %+v", p)
		}
		if len(p.PublicKey) < 20 || len(p.SecretKey) < 20 || p.PublicKey == p.SecretKey {
			t.Fatalf("project keys %q / %q: want two distinct random keys", p.PublicKey, p.SecretKey)
		}
		_, err := db.CreateProject(ctx, owner, "app")
		wantErr(t, err, database.ErrProjectAlreadyExists, "second project with the name")
		// The name is unique per owner only.
		q := must(db.CreateProject(ctx, stranger, "app")).get(t)
		if q.ID == p.ID || q.PublicKey == p.PublicKey || q.SecretKey == p.SecretKey {
			t.Fatalf("two projects share an ID or a key: %+v %+v", p, q)
		}
		p2 := must(db.CreateProject(ctx, owner, "app-2")).get(t)

		list := must(other.ListProjects(ctx, owner)).get(t)
		if len(list) != 2 || list[0].ID != p.ID || list[1].ID != p2.ID {
			t.Fatalf("owner's projects %v, want [app app-2] in creation order", names(list))
		}
		for what, find := range map[string]func() (*database.ProjectInfo, error){
			"name":       func() (*database.ProjectInfo, error) { return other.FindProjectByName(ctx, owner, "app") },
			"id":         func() (*database.ProjectInfo, error) { return other.FindProjectByID(ctx, p.ID) },
			"public key": func() (*database.ProjectInfo, error) { return other.FindProjectByPublicKey(ctx, p.PublicKey) },
			"secret key": func() (*database.ProjectInfo, error) { return other.FindProjectBySecretKey(ctx, p.SecretKey) },
		} {
			got := must(find()).get(t)
			if got.ID != p.ID || got.SecretKey != p.SecretKey || !got.CreatedAt.Equal(p.CreatedAt) {
				t.Fatalf("by %s: found %+v, want %+v", what, got, p)
			}
		}
		_, err = db.FindProjectByName(ctx, owner, "nope")
		wantErr(t, err, database.ErrProjectNotFound, "unknown name")
		_, err = db.FindProjectByID(ctx, unknownID())
		wantErr(t, err, database.ErrProjectNotFound, "unknown id")
		_, err = db.FindProjectByID(ctx, "not-hex")
		wantErr(t, err, database.ErrProjectNotFound, "malformed id")
		_, err = db.FindProjectByPublicKey(ctx, "nope")
		wantErr(t, err, database.ErrProjectNotFound, "unknown public key")
		_, err = db.FindProjectBySecretKey(ctx, "")
		wantErr(t, err, database.ErrProjectNotFound, "empty secret key")
	})

	t.Run("UpdateProject", func(t *testing.T) {
		db, other := newPair(t)
		ctx := testCtx(t)
		owner := unknownID()
		p := must(db.CreateProject(ctx, owner, "app")).get(t)
		must(db.CreateProject(ctx, owner, "taken")).get(t)
		name, url, methods := "renamed", "http://127.0.0.1:1/auth", []string{"AttachDocument", "PushPull"}
		events := []string{"DocumentRootChanged"}
		threshold, subs, attach, size, remove := "1h", 10, 20, 1<<20, true
		retries, minWait, maxWait, timeout := uint64(4), "100ms", "2s", "3s"
		got := must(db.UpdateProject(ctx, owner, p.ID, &database.ProjectUpdate{
			Name: &name, AuthWebhookURL: &url, AuthWebhookMethods: &methods,
			EventWebhookURL: &url, EventWebhookEvents: &events,
			ClientDeactivateThreshold: &threshold, MaxSubscribersPerDocument: &subs,
			MaxAttachmentsPerDocument: &attach, MaxSizePerDocument: &size, RemoveOnDetach: &remove,
			AuthWebhook:  database.WebhookUpdate{MaxRetries: &retries, MinWaitInterval: &minWait, MaxWaitInterval: &maxWait, RequestTimeout: &timeout},
			EventWebhook: database.WebhookUpdate{MaxRetries: &retries, RequestTimeout: &timeout},
		})).get(t)
		wantAuth := database.WebhookSettings{MaxRetries: retries, MinWaitInterval: minWait, MaxWaitInterval: maxWait, RequestTimeout: timeout}
		wantEvent := database.WebhookSettings{MaxRetries: retries, RequestTimeout: timeout}
		check := func(got *database.ProjectInfo) {
			t.Helper()
			if got.Name != name || got.AuthWebhookURL != url || !slices.Equal(got.AuthWebhookMethods, methods) ||
				got.EventWebhookURL != url || !slices.Equal(got.EventWebhookEvents, events) ||
				got.ClientDeactivateThreshold != threshold || got.MaxSubscribersPerDocument != subs ||
				got.MaxAttachmentsPerDocument != attach || got.MaxSizePerDocument != size || !got.RemoveOnDetach ||
				got.PublicKey != p.PublicKey || got.SecretKey != p.SecretKey || got.UpdatedAt.Before(p.UpdatedAt) ||
				got.AuthWebhook != wantAuth || got.EventWebhook != wantEvent {
				t.Fatalf("updated project %+v", got)
			}
		}
		check(got)
		check(must(other.FindProjectByName(ctx, owner, "renamed")).get(t))
		// Fields left nil stay.
		empty := ""
		got = must(db.UpdateProject(ctx, owner, p.ID, &database.ProjectUpdate{AuthWebhookURL: &empty})).get(t)
		if got.AuthWebhookURL != "" || got.Name != name || got.EventWebhookURL != url {
			t.Fatalf("partly updated project %+v", got)
		}
		taken := "taken"
		_, err := db.UpdateProject(ctx, owner, p.ID, &database.ProjectUpdate{Name: &taken})
		wantErr(t, err, database.ErrProjectAlreadyExists, "rename onto another project")
		_, err = db.UpdateProject(ctx, unknownID(), p.ID, &database.ProjectUpdate{Name: &empty})
		wantErr(t, err, database.ErrProjectNotFound, "update by another owner")
		_, err = db.UpdateProject(ctx, owner, unknownID(), &database.ProjectUpdate{})
		wantErr(t, err, database.ErrProjectNotFound, "update of an unknown project")
		if got := must(db.FindProjectByID(ctx, p.ID)).get(t); got.Name != name {
			t.Fatalf("a refused update changed the project: %+v", got)
		}
	})

	t.Run("ClientDeactivateThresholds", func(t *testing.T) {
		db, other := newPair(t)
		ctx := testCtx(t)
		owner := unknownID()
		if got := must(other.ClientDeactivateThresholds(ctx)).get(t); len(got) != 0 {
			t.Fatalf("thresholds of an empty database = %v, want none", got)
		}
		a := must(db.CreateProject(ctx, owner, "a")).get(t)
		b := must(db.CreateProject(ctx, unknownID(), "b")).get(t)
		must(db.CreateProject(ctx, owner, "unset")).get(t)
		hour, short, empty := "1h", "90s", ""
		must(db.UpdateProject(ctx, owner, a.ID, &database.ProjectUpdate{ClientDeactivateThreshold: &hour})).get(t)
		must(db.UpdateProject(ctx, b.Owner, b.ID, &database.ProjectUpdate{ClientDeactivateThreshold: &short})).get(t)
		want := map[string]string{a.ID: hour, b.ID: short}
		if got := must(other.ClientDeactivateThresholds(ctx)).get(t); !maps.Equal(got, want) {
			t.Fatalf("thresholds = %v, want %v: every owner's projects that set one", got, want)
		}
		// Clearing the setting hands the project back to the server's flag.
		must(db.UpdateProject(ctx, owner, a.ID, &database.ProjectUpdate{ClientDeactivateThreshold: &empty})).get(t)
		if got := must(other.ClientDeactivateThresholds(ctx)).get(t); !maps.Equal(got, map[string]string{b.ID: short}) {
			t.Fatalf("thresholds after clearing a's = %v, want only b's", got)
		}
	})

	t.Run("DefaultProjectAndSecrets", func(t *testing.T) {
		a, b := newPair(t)
		ctx := testCtx(t)
		owner := unknownID()
		var wg sync.WaitGroup
		got := make([]*database.ProjectInfo, 4)
		secrets := make([]string, 4)
		errs := make([]error, 8)
		for i := range 4 {
			db := []database.Database{a, b}[i%2]
			wg.Go(func() {
				got[i], errs[i] = db.EnsureDefaultProject(ctx, owner)
				secrets[i], errs[4+i] = db.EnsureSecret(ctx, "admin-token", database.NewSecret())
			})
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		for i := range 4 {
			if got[i].ID != database.DefaultProjectID || got[i].Name != database.DefaultProjectName ||
				got[i].Owner != owner || got[i].SecretKey != got[0].SecretKey || got[i].PublicKey != got[0].PublicKey {
				t.Fatalf("racing callers got default projects %+v and %+v", got[0], got[i])
			}
			if secrets[i] != secrets[0] || secrets[i] == "" {
				t.Fatalf("racing callers got secrets %q and %q", secrets[0], secrets[i])
			}
		}
		if s := must(b.EnsureSecret(ctx, "admin-token", "other")).get(t); s != secrets[0] {
			t.Fatalf("a later candidate replaced the secret: %q", s)
		}
		if s := must(b.EnsureSecret(ctx, "another", "v2")).get(t); s != "v2" {
			t.Fatalf("another secret: %q", s)
		}
		list := must(a.ListProjects(ctx, owner)).get(t)
		if len(list) != 1 || list[0].ID != database.DefaultProjectID {
			t.Fatalf("owner's projects %v, want the default one", names(list))
		}
	})
}

func names(ps []*database.ProjectInfo) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}
