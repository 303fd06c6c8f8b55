package admin_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/admin"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/servertest"
)

// clock is a settable time for throttling tests.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// startService serves an AdminService of its own over HTTP, with a clock
// the test moves and a log it reads.
func startService(t *testing.T, db database.Database, settings admin.Settings) (v1connect.AdminServiceClient, *clock, *bytes.Buffer) {
	t.Helper()
	clk := &clock{t: time.Now()}
	var log bytes.Buffer
	var logMu sync.Mutex
	settings.PasswordCost = bcrypt.MinCost
	svc, err := admin.New(ctxOf(t), admin.Config{
		Settings: settings, DB: db, Now: clk.now,
		Logger: slog.New(slog.NewTextHandler(&lockedWriter{w: &log, mu: &logMu}, nil)),
	})
	require.NoError(t, err)
	require.NoError(t, svc.Start(ctxOf(t)))
	path, h := svc.Handler()
	mux := httptest.NewServer(h)
	t.Cleanup(mux.Close)
	_ = path
	return v1connect.NewAdminServiceClient(mux.Client(), mux.URL), clk, &log
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func logIn(ctx context.Context, c v1connect.AdminServiceClient, user, pw string) error {
	_, err := c.LogIn(ctx, connect.NewRequest(&api.LogInRequest{Username: user, Password: pw}))
	return err
}

// TestAccounts covers ChangePassword, DeleteAccount, sign-up of a taken
// name, the sign-up switch and the project limit.
func TestAccounts(t *testing.T) {
	databases(t, func(t *testing.T, newDB func(t *testing.T) database.Database) {
		db := newDB(t)
		srv := servertest.Start(t, func(c *server.Config) { c.DB = db })
		c := adminClient(t, srv)
		ctx := ctxOf(t)
		_, err := c.SignUp(ctx, connect.NewRequest(&api.SignUpRequest{Username: "dan", Password: "first-pw1!"}))
		require.NoError(t, err)
		old := login(t, c, "dan", "first-pw1!")

		t.Run("SignUpTakenName", func(t *testing.T) {
			res, err := c.SignUp(ctx, connect.NewRequest(&api.SignUpRequest{Username: "dan", Password: "other-pw1!"}))
			require.NoError(t, err, "a taken name answers as a new one")
			require.Equal(t, "dan", res.Msg.User.Username)
			require.Len(t, res.Msg.User.Id, 24)
			real := mustUser(t, db, "dan")
			require.NotEqual(t, real.ID, res.Msg.User.Id)
			require.NoError(t, logIn(ctx, c, "dan", "first-pw1!"))
			wantCode(t, logIn(ctx, c, "dan", "other-pw1!"), connect.CodeUnauthenticated, "ErrMismatchedPassword")
		})

		t.Run("ChangePassword", func(t *testing.T) {
			change := func(user, cur, next string) error {
				_, err := c.ChangePassword(ctx, connect.NewRequest(&api.ChangePasswordRequest{Username: user, CurrentPassword: cur, NewPassword: next}))
				return err
			}
			wantCode(t, change("dan", "wrong-pw1!", "second-pw2!"), connect.CodeUnauthenticated, "ErrMismatchedPassword")
			wantCode(t, change("nobody", "first-pw1!", "second-pw2!"), connect.CodeUnauthenticated, "ErrMismatchedPassword")
			wantCode(t, change("dan", "first-pw1!", "weak"), connect.CodeInvalidArgument, "ErrInvalidArgument")
			require.NoError(t, logIn(ctx, c, "dan", "first-pw1!"), "nothing changed")
			require.NoError(t, change("dan", "first-pw1!", "second-pw2!"))
			wantCode(t, logIn(ctx, c, "dan", "first-pw1!"), connect.CodeUnauthenticated, "ErrMismatchedPassword")
			// Tokens issued before the change end with it.
			_, err := c.ListProjects(ctx, authed(&api.ListProjectsRequest{}, old))
			wantCode(t, err, connect.CodeUnauthenticated, "ErrUnauthenticated")
			_, err = c.ListProjects(ctx, authed(&api.ListProjectsRequest{}, login(t, c, "dan", "second-pw2!")))
			require.NoError(t, err)
		})

		t.Run("DeleteAccount", func(t *testing.T) {
			del := func(user, pw string) error {
				_, err := c.DeleteAccount(ctx, connect.NewRequest(&api.DeleteAccountRequest{Username: user, Password: pw}))
				return err
			}
			token := login(t, c, "dan", "second-pw2!")
			created, err := c.CreateProject(ctx, authed(&api.CreateProjectRequest{Name: "dans"}, token))
			require.NoError(t, err)
			wantCode(t, del("dan", "wrong-pw1!"), connect.CodeUnauthenticated, "ErrMismatchedPassword")
			wantCode(t, del("admin", "admin"), connect.CodeFailedPrecondition, admin.CodeDefaultAccount)
			require.NoError(t, logIn(ctx, c, "admin", "admin"))
			require.NoError(t, del("dan", "second-pw2!"))
			wantCode(t, logIn(ctx, c, "dan", "second-pw2!"), connect.CodeUnauthenticated, "ErrMismatchedPassword")
			_, err = c.ListProjects(ctx, authed(&api.ListProjectsRequest{}, token))
			wantCode(t, err, connect.CodeUnauthenticated, "ErrUnauthenticated")
			wantCode(t, del("dan", "second-pw2!"), connect.CodeUnauthenticated, "ErrMismatchedPassword")
			// The project stays; its secret key still works.
			_, err = c.GetServerVersion(ctx, withKey(&api.GetServerVersionRequest{}, created.Msg.Project.SecretKey))
			require.NoError(t, err)
		})
	})
}

// TestHardening covers throttling, the sign-up switch, the project limit
// and the admin password's rotation and warning, with a clock the test
// moves.
func TestHardening(t *testing.T) {
	databases(t, func(t *testing.T, newDB func(t *testing.T) database.Database) {
		ctx := ctxOf(t)
		db := newDB(t)

		t.Run("DefaultPassword", func(t *testing.T) {
			c, _, log := startService(t, db, admin.Settings{TokenSecret: "s"})
			require.Contains(t, log.String(), "default password")
			require.NoError(t, logIn(ctx, c, "admin", "admin"))
			// Set explicitly, the password replaces the stored one.
			c, _, log = startService(t, db, admin.Settings{TokenSecret: "s", Password: "r0tated-pw!", ResetPassword: true})
			require.NotContains(t, log.String(), "default password")
			wantCode(t, logIn(ctx, c, "admin", "admin"), connect.CodeUnauthenticated, "ErrMismatchedPassword")
			require.NoError(t, logIn(ctx, c, "admin", "r0tated-pw!"))
			// Not set explicitly, the stored one stays.
			c, _, _ = startService(t, db, admin.Settings{TokenSecret: "s"})
			require.NoError(t, logIn(ctx, c, "admin", "r0tated-pw!"))
		})

		t.Run("LogInThrottle", func(t *testing.T) {
			c, clk, _ := startService(t, db, admin.Settings{TokenSecret: "s", Password: "r0tated-pw!"})
			for range 5 {
				wantCode(t, logIn(ctx, c, "admin", "guess-1!"), connect.CodeUnauthenticated, "ErrMismatchedPassword")
			}
			// Even the right password waits now.
			wantCode(t, logIn(ctx, c, "admin", "r0tated-pw!"), connect.CodeResourceExhausted, admin.CodeTooManyAttempts)
			clk.add(time.Second)
			wantCode(t, logIn(ctx, c, "admin", "guess-2!"), connect.CodeUnauthenticated, "ErrMismatchedPassword")
			clk.add(time.Second) // the backoff doubled
			wantCode(t, logIn(ctx, c, "admin", "r0tated-pw!"), connect.CodeResourceExhausted, admin.CodeTooManyAttempts)
			clk.add(time.Second)
			require.NoError(t, logIn(ctx, c, "admin", "r0tated-pw!"))
			require.NoError(t, logIn(ctx, c, "admin", "r0tated-pw!"), "a success clears the user's record")

			// Per address: guesses spread over many names are slowed too.
			// The counts above are kept in the database and this address
			// made them: this node's clock starts once they are stale.
			c, clk, _ = startService(t, db, admin.Settings{TokenSecret: "s", Password: "r0tated-pw!"})
			clk.add(20 * time.Minute)
			for i := range 20 {
				wantCode(t, logIn(ctx, c, "name-"+string(rune('a'+i)), "guess-1!"), connect.CodeUnauthenticated, "ErrMismatchedPassword")
			}
			wantCode(t, logIn(ctx, c, "admin", "r0tated-pw!"), connect.CodeResourceExhausted, admin.CodeTooManyAttempts)
			// Another node on the same database counts the same attempts.
			other, otherClk, _ := startService(t, db, admin.Settings{TokenSecret: "s"})
			otherClk.add(clk.now().Sub(otherClk.now()))
			wantCode(t, logIn(ctx, other, "admin", "r0tated-pw!"), connect.CodeResourceExhausted, admin.CodeTooManyAttempts)
			// ChangePassword checks passwords under the same throttle.
			_, err := c.ChangePassword(ctx, connect.NewRequest(&api.ChangePasswordRequest{Username: "admin", CurrentPassword: "r0tated-pw!", NewPassword: "an0ther-pw!"}))
			wantCode(t, err, connect.CodeResourceExhausted, admin.CodeTooManyAttempts)
			clk.add(time.Second)
			require.NoError(t, logIn(ctx, c, "admin", "r0tated-pw!"))
		})

		t.Run("SignUp", func(t *testing.T) {
			c, clk, _ := startService(t, db, admin.Settings{TokenSecret: "s", Password: "r0tated-pw!", MaxProjectsPerUser: 2})
			// The log-in counts of the subtest before, kept in the
			// database, are stale by then.
			clk.add(time.Hour)
			for i := range 20 {
				_, err := c.SignUp(ctx, connect.NewRequest(&api.SignUpRequest{Username: "user-" + string(rune('a'+i)), Password: "s3cret-pw!"}))
				require.NoError(t, err)
			}
			_, err := c.SignUp(ctx, connect.NewRequest(&api.SignUpRequest{Username: "one-more", Password: "s3cret-pw!"}))
			wantCode(t, err, connect.CodeResourceExhausted, admin.CodeTooManyAttempts)
			_, err = db.FindUserByName(ctx, "one-more")
			require.ErrorIs(t, err, database.ErrUserNotFound)
			clk.add(time.Second)
			_, err = c.SignUp(ctx, connect.NewRequest(&api.SignUpRequest{Username: "one-more", Password: "s3cret-pw!"}))
			require.NoError(t, err)

			// The project limit.
			res, err := c.LogIn(ctx, connect.NewRequest(&api.LogInRequest{Username: "one-more", Password: "s3cret-pw!"}))
			require.NoError(t, err)
			for _, name := range []string{"p1", "p2"} {
				_, err := c.CreateProject(ctx, authed(&api.CreateProjectRequest{Name: name}, res.Msg.Token))
				require.NoError(t, err)
			}
			_, err = c.CreateProject(ctx, authed(&api.CreateProjectRequest{Name: "p3"}, res.Msg.Token))
			wantCode(t, err, connect.CodeResourceExhausted, admin.CodeTooManyProjects)
			n, err := db.CountProjects(ctx, mustUser(t, db, "one-more").ID)
			require.NoError(t, err)
			require.Equal(t, 2, n)

			// Turned off, SignUp refuses and creates nothing.
			c, _, _ = startService(t, db, admin.Settings{TokenSecret: "s", Password: "r0tated-pw!", SignUpDisabled: true})
			_, err = c.SignUp(ctx, connect.NewRequest(&api.SignUpRequest{Username: "late", Password: "s3cret-pw!"}))
			wantCode(t, err, connect.CodePermissionDenied, admin.CodeSignUpDisabled)
			_, err = db.FindUserByName(ctx, "late")
			require.ErrorIs(t, err, database.ErrUserNotFound)
		})
	})
}
