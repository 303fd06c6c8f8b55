package admin_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/backend/database/dbtest"
	"github.com/yorkie-affinity/yorkie/server/backend/database/memory"
	"github.com/yorkie-affinity/yorkie/server/servertest"
	"github.com/yorkie-affinity/yorkie/test/testenv"
)

// databases runs a test on the memory database and on MongoDB (FerretDB);
// every newDB call of one run is a handle on the same database.
func databases(t *testing.T, run func(t *testing.T, newDB func(t *testing.T) database.Database)) {
	t.Run("memory", func(t *testing.T) {
		// One database, as two handles on one MongoDB database are.
		db := memory.New()
		t.Cleanup(func() { _ = db.Close(context.Background()) })
		run(t, func(*testing.T) database.Database { return db })
	})
	t.Run("mongo", func(t *testing.T) {
		m := testenv.MongoURI(t)
		name := m.NewDatabase()
		run(t, func(t *testing.T) database.Database { return dbtest.DialMongo(t, m, name) })
	})
}

func adminClient(t *testing.T, srv *server.Server) v1connect.AdminServiceClient {
	return v1connect.NewAdminServiceClient(servertest.HTTPClient(t, servertest.ConnectProto), servertest.BaseURL(srv))
}

func ctxOf(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// authed wraps a message in a request carrying the token as upstream's CLI
// sends it.
func authed[T any](msg *T, token string) *connect.Request[T] {
	req := connect.NewRequest(msg)
	req.Header().Set("Authorization", "Bearer "+token)
	return req
}

func login(t *testing.T, c v1connect.AdminServiceClient, user, password string) string {
	t.Helper()
	res, err := c.LogIn(ctxOf(t), connect.NewRequest(&api.LogInRequest{Username: user, Password: password}))
	if err != nil {
		t.Fatalf("log in as %s: %v", user, err)
	}
	return res.Msg.Token
}

// wantCode checks a call's Connect code and, if name is set, its ErrorInfo code.
func wantCode(t *testing.T, err error, code connect.Code, name string) {
	t.Helper()
	if connect.CodeOf(err) != code {
		t.Fatalf("got %v, want code %v", err, code)
	}
	if name == "" {
		return
	}
	var cerr *connect.Error
	errors.As(err, &cerr)
	for _, d := range cerr.Details() {
		if v, derr := d.Value(); derr == nil {
			if info, ok := v.(*errdetails.ErrorInfo); ok && info.Metadata["code"] == name {
				return
			}
		}
	}
	t.Fatalf("got %v, want ErrorInfo code %s", err, name)
}

// signed builds a token for user expiring at exp, signed with secret: what
// a holder of the secret (or a forger without it) could send.
func signed(secret, user string, exp time.Time) string {
	enc := base64.RawURLEncoding.EncodeToString
	head := enc([]byte(`{"alg":"HS256","typ":"JWT"}`))
	body, _ := json.Marshal(map[string]any{"username": user, "exp": exp.Unix()})
	input := head + "." + enc(body)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(input))
	return input + "." + enc(mac.Sum(nil))
}

func TestAdminService(t *testing.T) {
	databases(t, func(t *testing.T, newDB func(t *testing.T) database.Database) {
		const secret = "test-token-secret"
		srv := servertest.Start(t, func(c *server.Config) {
			c.DB = newDB(t)
			c.Admin.TokenSecret = secret
			c.Admin.Version = "1.2.3-test"
			c.Admin.BuildDate = "2026-12-01"
		})
		c := adminClient(t, srv)
		ctx := ctxOf(t)

		// The default account exists and owns the default project.
		token := login(t, c, "admin", "admin")
		list, err := c.ListProjects(ctx, authed(&api.ListProjectsRequest{}, token))
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Msg.Projects) != 1 || list.Msg.Projects[0].Name != "default" || list.Msg.Projects[0].Id != database.DefaultProjectID {
			t.Fatalf("admin's projects: %v", list.Msg.Projects)
		}

		t.Run("LogIn", func(t *testing.T) {
			_, err := c.LogIn(ctx, connect.NewRequest(&api.LogInRequest{Username: "admin", Password: "wrong"}))
			wantCode(t, err, connect.CodeUnauthenticated, "ErrMismatchedPassword")
			_, err = c.LogIn(ctx, connect.NewRequest(&api.LogInRequest{Username: "nobody", Password: "admin"}))
			wantCode(t, err, connect.CodeUnauthenticated, "ErrMismatchedPassword")
			// The token carries the user and expires after the default week.
			parts := strings.Split(token, ".")
			raw, err := base64.RawURLEncoding.DecodeString(parts[1])
			if err != nil || len(parts) != 3 {
				t.Fatalf("token %q is not a JWT", token)
			}
			var claims struct {
				Username string `json:"username"`
				Exp      int64  `json:"exp"`
			}
			if err := json.Unmarshal(raw, &claims); err != nil {
				t.Fatal(err)
			}
			week := time.Now().Add(7 * 24 * time.Hour)
			if claims.Username != "admin" || claims.Exp < week.Add(-time.Hour).Unix() || claims.Exp > week.Unix()+1 {
				t.Fatalf("token claims %+v, want admin expiring in a week", claims)
			}
		})

		t.Run("Tokens", func(t *testing.T) {
			calls := map[string]func(req *connect.Request[api.ListProjectsRequest]) error{
				"missing": func(req *connect.Request[api.ListProjectsRequest]) error {
					req.Header().Del("Authorization")
					_, err := c.ListProjects(ctx, req)
					return err
				},
				"not bearer": func(req *connect.Request[api.ListProjectsRequest]) error {
					req.Header().Set("Authorization", "Basic "+token)
					_, err := c.ListProjects(ctx, req)
					return err
				},
				"garbage": func(req *connect.Request[api.ListProjectsRequest]) error {
					req.Header().Set("Authorization", "Bearer not.a.token")
					_, err := c.ListProjects(ctx, req)
					return err
				},
				"forged": func(req *connect.Request[api.ListProjectsRequest]) error {
					req.Header().Set("Authorization", "Bearer "+signed("guessed", "admin", time.Now().Add(time.Hour)))
					_, err := c.ListProjects(ctx, req)
					return err
				},
				"expired": func(req *connect.Request[api.ListProjectsRequest]) error {
					req.Header().Set("Authorization", "Bearer "+signed(secret, "admin", time.Now().Add(-time.Minute)))
					_, err := c.ListProjects(ctx, req)
					return err
				},
				"unknown user": func(req *connect.Request[api.ListProjectsRequest]) error {
					req.Header().Set("Authorization", "Bearer "+signed(secret, "ghost", time.Now().Add(time.Hour)))
					_, err := c.ListProjects(ctx, req)
					return err
				},
			}
			for name, call := range calls {
				t.Run(name, func(t *testing.T) {
					wantCode(t, call(authed(&api.ListProjectsRequest{}, token)), connect.CodeUnauthenticated, "ErrUnauthenticated")
				})
			}
			// A token signed with the secret but naming no password of the
			// user (as one issued before a password change) is refused too.
			_, err := c.ListProjects(ctx, authed(&api.ListProjectsRequest{}, signed(secret, "admin", time.Now().Add(time.Hour))))
			wantCode(t, err, connect.CodeUnauthenticated, "ErrUnauthenticated")
			// Every call but SignUp and LogIn needs a token.
			_, err = c.CreateProject(ctx, connect.NewRequest(&api.CreateProjectRequest{Name: "p"}))
			wantCode(t, err, connect.CodeUnauthenticated, "ErrUnauthenticated")
			_, err = c.GetServerVersion(ctx, connect.NewRequest(&api.GetServerVersionRequest{}))
			wantCode(t, err, connect.CodeUnauthenticated, "ErrUnauthenticated")
		})

		t.Run("SignUp", func(t *testing.T) {
			res, err := c.SignUp(ctx, connect.NewRequest(&api.SignUpRequest{Username: "ada", Password: "s3cret-pw!"}))
			if err != nil {
				t.Fatal(err)
			}
			if res.Msg.User.Username != "ada" || res.Msg.User.Id == "" || res.Msg.User.CreatedAt == nil {
				t.Fatalf("signed up %v", res.Msg.User)
			}
			// A taken name answers as a free one would (TestAccounts).
			_, err = c.SignUp(ctx, connect.NewRequest(&api.SignUpRequest{Username: "ada", Password: "0ther-pw!"}))
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.SignUp(ctx, connect.NewRequest(&api.SignUpRequest{Username: "bob", Password: "short"}))
			wantCode(t, err, connect.CodeInvalidArgument, "ErrInvalidArgument")
			_, err = c.SignUp(ctx, connect.NewRequest(&api.SignUpRequest{Username: "no spaces", Password: "s3cret-pw!"}))
			wantCode(t, err, connect.CodeInvalidArgument, "ErrInvalidArgument")
			// The new user logs in and sees only their own projects.
			ada := login(t, c, "ada", "s3cret-pw!")
			list, err := c.ListProjects(ctx, authed(&api.ListProjectsRequest{}, ada))
			if err != nil || len(list.Msg.Projects) != 0 {
				t.Fatalf("a new user's projects: %v, %v", list, err)
			}
		})

		t.Run("Projects", func(t *testing.T) {
			created, err := c.CreateProject(ctx, authed(&api.CreateProjectRequest{Name: "app"}, token))
			if err != nil {
				t.Fatal(err)
			}
			p := created.Msg.Project
			if p.Name != "app" || p.Id == "" || p.PublicKey == "" || p.SecretKey == "" || p.CreatedAt == nil {
				t.Fatalf("created %v", p)
			}
			_, err = c.CreateProject(ctx, authed(&api.CreateProjectRequest{Name: "app"}, token))
			wantCode(t, err, connect.CodeAlreadyExists, "ErrProjectAlreadyExists")
			_, err = c.CreateProject(ctx, authed(&api.CreateProjectRequest{Name: "a"}, token))
			wantCode(t, err, connect.CodeInvalidArgument, "ErrInvalidArgument")

			got, err := c.GetProject(ctx, authed(&api.GetProjectRequest{Name: "app"}, token))
			if err != nil || got.Msg.Project.Id != p.Id || got.Msg.Project.SecretKey != p.SecretKey {
				t.Fatalf("get project: %v, %v", got, err)
			}
			_, err = c.GetProject(ctx, authed(&api.GetProjectRequest{Name: "nope"}, token))
			wantCode(t, err, connect.CodeNotFound, "ErrProjectNotFound")
			// Another user's project is not found.
			other := login(t, c, "ada", "s3cret-pw!")
			_, err = c.GetProject(ctx, authed(&api.GetProjectRequest{Name: "app"}, other))
			wantCode(t, err, connect.CodeNotFound, "ErrProjectNotFound")

			updated, err := c.UpdateProject(ctx, authed(&api.UpdateProjectRequest{Id: p.Id, Fields: &api.UpdatableProjectFields{
				Name:                        wrapperspb.String("app-2"),
				AuthWebhookUrl:              wrapperspb.String("http://127.0.0.1:9/auth"),
				AuthWebhookMethods:          &api.UpdatableProjectFields_AuthWebhookMethods{Methods: []string{"AttachDocument", "PushPull"}},
				EventWebhookUrl:             wrapperspb.String("https://example.com/events"),
				EventWebhookEvents:          &api.UpdatableProjectFields_EventWebhookEvents{Events: []string{"DocumentRootChanged"}},
				ClientDeactivateThreshold:   wrapperspb.String("1h"),
				MaxSubscribersPerDocument:   wrapperspb.Int32(5),
				MaxAttachmentsPerDocument:   wrapperspb.Int32(6),
				MaxSizePerDocument:          wrapperspb.Int32(1 << 20),
				RemoveOnDetach:              wrapperspb.Bool(true),
				AuthWebhookMaxRetries:       wrapperspb.UInt64(3),
				AuthWebhookMinWaitInterval:  wrapperspb.String("100ms"),
				AuthWebhookMaxWaitInterval:  wrapperspb.String("2s"),
				AuthWebhookRequestTimeout:   wrapperspb.String("1500ms"),
				EventWebhookMaxRetries:      wrapperspb.UInt64(7),
				EventWebhookMinWaitInterval: wrapperspb.String("50ms"),
				EventWebhookMaxWaitInterval: wrapperspb.String("10s"),
				EventWebhookRequestTimeout:  wrapperspb.String("4s"),
			}}, token))
			if err != nil {
				t.Fatal(err)
			}
			u := updated.Msg.Project
			if u.Name != "app-2" || u.AuthWebhookUrl != "http://127.0.0.1:9/auth" || strings.Join(u.AuthWebhookMethods, ",") != "AttachDocument,PushPull" ||
				u.EventWebhookUrl != "https://example.com/events" || strings.Join(u.EventWebhookEvents, ",") != "DocumentRootChanged" ||
				u.ClientDeactivateThreshold != "1h" || u.MaxSubscribersPerDocument != 5 || u.MaxAttachmentsPerDocument != 6 ||
				u.MaxSizePerDocument != 1<<20 || !u.RemoveOnDetach || u.PublicKey != p.PublicKey || u.SecretKey != p.SecretKey ||
				u.AuthWebhookMaxRetries != 3 || u.AuthWebhookMinWaitInterval != "100ms" || u.AuthWebhookMaxWaitInterval != "2s" ||
				u.AuthWebhookRequestTimeout != "1500ms" || u.EventWebhookMaxRetries != 7 || u.EventWebhookMinWaitInterval != "50ms" ||
				u.EventWebhookMaxWaitInterval != "10s" || u.EventWebhookRequestTimeout != "4s" {
				t.Fatalf("updated %v", u)
			}
			got, err = c.GetProject(ctx, authed(&api.GetProjectRequest{Name: "app-2"}, token))
			if err != nil || !proto.Equal(got.Msg.Project, u) {
				t.Fatalf("the update was not kept: %v, %v", got, err)
			}
			// A field left out stays as it was.
			if kept, err := c.UpdateProject(ctx, authed(&api.UpdateProjectRequest{Id: p.Id, Fields: &api.UpdatableProjectFields{
				EventWebhookRequestTimeout: wrapperspb.String(""),
			}}, token)); err != nil || kept.Msg.Project.EventWebhookRequestTimeout != "" || kept.Msg.Project.EventWebhookMaxRetries != 7 ||
				kept.Msg.Project.MaxAttachmentsPerDocument != 6 {
				t.Fatalf("partial update: %v, %v", kept, err)
			}

			bad := map[string]*api.UpdatableProjectFields{
				"name":      {Name: wrapperspb.String("bad name")},
				"url":       {AuthWebhookUrl: wrapperspb.String("ftp://x")},
				"method":    {AuthWebhookMethods: &api.UpdatableProjectFields_AuthWebhookMethods{Methods: []string{"Nope"}}},
				"event":     {EventWebhookEvents: &api.UpdatableProjectFields_EventWebhookEvents{Events: []string{"Nope"}}},
				"threshold": {ClientDeactivateThreshold: wrapperspb.String("soon")},
				"limit":     {MaxAttachmentsPerDocument: wrapperspb.Int32(-1)},
				"timeout":   {AuthWebhookRequestTimeout: wrapperspb.String("3")},
				"wait":      {EventWebhookMinWaitInterval: wrapperspb.String("-1s")},
				"waits":     {AuthWebhookMinWaitInterval: wrapperspb.String("5s"), AuthWebhookMaxWaitInterval: wrapperspb.String("1s")},
			}
			for name, f := range bad {
				_, err := c.UpdateProject(ctx, authed(&api.UpdateProjectRequest{Id: p.Id, Fields: f}, token))
				if connect.CodeOf(err) != connect.CodeInvalidArgument {
					t.Fatalf("%s: got %v, want invalid_argument", name, err)
				}
			}
			if kept, err := c.UpdateProject(ctx, authed(&api.UpdateProjectRequest{Id: p.Id, Fields: &api.UpdatableProjectFields{
				AutoRevisionEnabled: wrapperspb.Bool(true),
			}}, token)); err != nil || !kept.Msg.Project.AutoRevisionEnabled {
				t.Fatalf("auto_revision_enabled not kept: %v", err)
			}
			// Sent back unchanged, as upstream's CLI does, such a field is fine.
			if _, err = c.UpdateProject(ctx, authed(&api.UpdateProjectRequest{Id: p.Id, Fields: &api.UpdatableProjectFields{
				SnapshotThreshold: wrapperspb.Int64(0), SnapshotInterval: wrapperspb.Int64(0),
				AllowedOrigins: &api.UpdatableProjectFields_AllowedOrigins{},
			}}, token)); err != nil {
				t.Fatalf("unchanged unsupported fields refused: %v", err)
			}
			_, err = c.UpdateProject(ctx, authed(&api.UpdateProjectRequest{Id: p.Id, Fields: &api.UpdatableProjectFields{
				Name: wrapperspb.String("default"),
			}}, token))
			wantCode(t, err, connect.CodeAlreadyExists, "ErrProjectAlreadyExists")
			_, err = c.UpdateProject(ctx, authed(&api.UpdateProjectRequest{Id: "0123456789abcdef01234567", Fields: &api.UpdatableProjectFields{
				Name: wrapperspb.String("x-y"),
			}}, token))
			wantCode(t, err, connect.CodeNotFound, "ErrProjectNotFound")
			_, err = c.UpdateProject(ctx, authed(&api.UpdateProjectRequest{Id: p.Id, Fields: &api.UpdatableProjectFields{
				Name: wrapperspb.String("stolen"),
			}}, other))
			wantCode(t, err, connect.CodeNotFound, "ErrProjectNotFound")

			list, err := c.ListProjects(ctx, authed(&api.ListProjectsRequest{}, token))
			if err != nil || len(list.Msg.Projects) != 2 || list.Msg.Projects[0].Name != "default" || list.Msg.Projects[1].Name != "app-2" {
				t.Fatalf("list after update: %v, %v", list, err)
			}
		})

		t.Run("GetServerVersion", func(t *testing.T) {
			res, err := c.GetServerVersion(ctx, authed(&api.GetServerVersionRequest{}, token))
			if err != nil {
				t.Fatal(err)
			}
			if res.Msg.YorkieVersion != "1.2.3-test" || res.Msg.GoVersion != runtime.Version() || res.Msg.BuildDate != "2026-12-01" {
				t.Fatalf("server version %v", res.Msg)
			}
		})

		t.Run("Metrics", func(t *testing.T) {
			families, err := srv.Registry().Gather()
			if err != nil {
				t.Fatal(err)
			}
			counts := map[string]float64{}
			for _, f := range families {
				if f.GetName() != "yorkie_admin_calls_total" {
					continue
				}
				for _, m := range f.GetMetric() {
					var method, code string
					for _, l := range m.GetLabel() {
						switch l.GetName() {
						case "method":
							method = l.GetValue()
						case "code":
							code = l.GetValue()
						}
					}
					counts[method+"/"+code] = m.GetCounter().GetValue()
				}
			}
			if counts["LogIn/ok"] < 1 || counts["LogIn/unauthenticated"] < 2 || counts["CreateProject/already_exists"] < 1 {
				t.Fatalf("admin call counts %v", counts)
			}
		})

		t.Run("Protocols", func(t *testing.T) {
			// Dashboards speak Connect JSON, other tools gRPC or gRPC-web.
			for _, p := range servertest.Protocols() {
				pc := v1connect.NewAdminServiceClient(servertest.HTTPClient(t, p), servertest.BaseURL(srv), p.ClientOptions()...)
				res, err := pc.GetProject(ctx, authed(&api.GetProjectRequest{Name: "default"}, token))
				if err != nil || res.Msg.Project.Id != database.DefaultProjectID {
					t.Fatalf("%v: get project: %v, %v", p, res, err)
				}
				_, err = pc.ListProjects(ctx, connect.NewRequest(&api.ListProjectsRequest{}))
				wantCode(t, err, connect.CodeUnauthenticated, "ErrUnauthenticated")
			}
		})
	})
}

// TestAdminSharedSecret starts two servers on one database: a token issued
// by one is accepted by the other, and both see one default project.
func TestAdminSharedSecret(t *testing.T) {
	databases(t, func(t *testing.T, newDB func(t *testing.T) database.Database) {
		a := servertest.Start(t, func(c *server.Config) { c.DB = newDB(t) })
		b := servertest.Start(t, func(c *server.Config) { c.DB = newDB(t) })
		ca, cb := adminClient(t, a), adminClient(t, b)
		ctx := ctxOf(t)
		token := login(t, ca, "admin", "admin")
		created, err := cb.CreateProject(ctx, authed(&api.CreateProjectRequest{Name: "shared"}, token))
		if err != nil {
			t.Fatalf("node b refused node a's token: %v", err)
		}
		la, err := ca.ListProjects(ctx, authed(&api.ListProjectsRequest{}, login(t, cb, "admin", "admin")))
		if err != nil {
			t.Fatalf("node a refused node b's token: %v", err)
		}
		if len(la.Msg.Projects) != 2 || la.Msg.Projects[0].Id != database.DefaultProjectID || la.Msg.Projects[1].Id != created.Msg.Project.Id {
			t.Fatalf("projects seen by node a: %v", la.Msg.Projects)
		}
		// A token made for another database's secret is refused.
		other := servertest.Start(t)
		_, err = adminClient(t, other).ListProjects(ctx, authed(&api.ListProjectsRequest{}, token))
		wantCode(t, err, connect.CodeUnauthenticated, "ErrUnauthenticated")
	})
}

// TestAdminConfiguredAccount checks the flags' account: another name and
// password, created at start; admin/admin does not exist then.
func TestAdminConfiguredAccount(t *testing.T) {
	srv := servertest.Start(t, func(c *server.Config) {
		c.Admin.User, c.Admin.Password = "root", "hunter2!"
		c.Admin.TokenDuration = time.Hour
	})
	c := adminClient(t, srv)
	// The token's expiry is the server's clock at login plus the duration,
	// so it lies in this window (exp has whole seconds) however slow the
	// login is.
	loggingIn := time.Now().Truncate(time.Second)
	token := login(t, c, "root", "hunter2!")
	loggedIn := time.Now()
	_, err := c.LogIn(ctxOf(t), connect.NewRequest(&api.LogInRequest{Username: "admin", Password: "admin"}))
	wantCode(t, err, connect.CodeUnauthenticated, "ErrMismatchedPassword")
	raw, _ := base64.RawURLEncoding.DecodeString(strings.Split(token, ".")[1])
	var claims struct{ Exp int64 }
	_ = json.Unmarshal(raw, &claims)
	if exp := time.Unix(claims.Exp, 0); exp.Before(loggingIn.Add(time.Hour)) || exp.After(loggedIn.Add(time.Hour)) {
		t.Fatalf("token expires at %s, want the configured hour after the login (%s to %s)", exp, loggingIn, loggedIn)
	}
}
