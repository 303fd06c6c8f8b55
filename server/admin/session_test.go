package admin_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/admin"
	"github.com/yorkie-affinity/yorkie/server/servertest"
)

// noRedirect is a client that shows redirects instead of following them.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func do(t *testing.T, method, u, body string, header map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxOf(t), method, u, strings.NewReader(body))
	require.NoError(t, err)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := noRedirect.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { _ = res.Body.Close() })
	return res
}

func sessionCookie(res *http.Response) *http.Cookie {
	for _, c := range res.Cookies() {
		if c.Name == admin.SessionCookie {
			return c
		}
	}
	return nil
}

func readBody(t *testing.T, res *http.Response) string {
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return string(b)
}

// TestSessions covers the dashboard's cookie sessions, the CORS guard of
// the admin paths and the dashboard files the server serves.
func TestSessions(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "index.html"), []byte("<html>dashboard</html>"), 0o600))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "assets"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "assets", "app.js"), []byte("console.log(1)"), 0o600))
	srv := servertest.Start(t, func(c *server.Config) {
		c.DashboardDir = dir
		c.AdminAllowedOrigins = []string{"https://dash.example"}
	})
	base := servertest.BaseURL(srv)
	jsonHeader := map[string]string{"Content-Type": "application/json"}

	t.Run("LogIn", func(t *testing.T) {
		res := do(t, "POST", base+"/auth/login", `{"username":"admin","password":"wrong"}`, jsonHeader)
		assert.Equal(t, http.StatusUnauthorized, res.StatusCode)
		assert.Nil(t, sessionCookie(res))
		for _, body := range []string{`{`, `{"username":"admin"}`, strings.Repeat(" ", 5000) + `{}`} {
			res = do(t, "POST", base+"/auth/login", body, jsonHeader)
			assert.Equal(t, http.StatusBadRequest, res.StatusCode, body)
		}
		res = do(t, "GET", base+"/auth/login", "", nil)
		assert.Equal(t, http.StatusMethodNotAllowed, res.StatusCode)

		res = do(t, "POST", base+"/auth/login", `{"username":"admin","password":"admin"}`, jsonHeader)
		require.Equal(t, http.StatusOK, res.StatusCode)
		c := sessionCookie(res)
		require.NotNil(t, c)
		assert.True(t, c.HttpOnly)
		assert.True(t, c.Secure)
		assert.Equal(t, http.SameSiteStrictMode, c.SameSite)
		assert.Equal(t, "/", c.Path)
		assert.Equal(t, 86400, c.MaxAge)

		cookie := map[string]string{"Cookie": c.Name + "=" + c.Value}
		res = do(t, "GET", base+"/auth/me", "", cookie)
		require.Equal(t, http.StatusOK, res.StatusCode)
		var me map[string]string
		require.NoError(t, json.NewDecoder(res.Body).Decode(&me))
		assert.Equal(t, map[string]string{"authProvider": "", "username": "admin"}, me)
		for _, bad := range []map[string]string{nil, {"Cookie": admin.SessionCookie + "=forged"}, {"Cookie": admin.SessionCookie + "="}} {
			res = do(t, "GET", base+"/auth/me", "", bad)
			assert.Equal(t, http.StatusUnauthorized, res.StatusCode)
		}

		res = do(t, "POST", base+"/auth/logout", "", cookie)
		require.Equal(t, http.StatusOK, res.StatusCode)
		out := sessionCookie(res)
		require.NotNil(t, out)
		assert.Empty(t, out.Value)
		assert.Negative(t, out.MaxAge)
	})

	t.Run("Origins", func(t *testing.T) {
		login := `{"username":"admin","password":"admin"}`
		// Another web origin is refused before anything runs.
		res := do(t, "POST", base+"/auth/login", login, map[string]string{"Content-Type": "application/json", "Origin": "https://evil.example"})
		assert.Equal(t, http.StatusForbidden, res.StatusCode)
		assert.Nil(t, sessionCookie(res))
		res = do(t, "POST", base+"/yorkie.v1.AdminService/LogIn", login, map[string]string{"Content-Type": "application/json", "Origin": "https://evil.example"})
		assert.Equal(t, http.StatusForbidden, res.StatusCode)
		assert.Empty(t, res.Header.Get("Access-Control-Allow-Origin"))
		// The server's own origin (the dashboard it serves) passes.
		res = do(t, "POST", base+"/auth/login", login, map[string]string{"Content-Type": "application/json", "Origin": base})
		assert.Equal(t, http.StatusOK, res.StatusCode)
		// A configured origin gets credentials.
		res = do(t, "OPTIONS", base+"/yorkie.v1.AdminService/ListProjects", "", map[string]string{
			"Origin": "https://dash.example", "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type,authorization",
		})
		assert.Equal(t, http.StatusNoContent, res.StatusCode)
		assert.Equal(t, "https://dash.example", res.Header.Get("Access-Control-Allow-Origin"))
		assert.Equal(t, "true", res.Header.Get("Access-Control-Allow-Credentials"))
		res = do(t, "OPTIONS", base+"/yorkie.v1.AdminService/ListProjects", "", map[string]string{
			"Origin": "https://evil.example", "Access-Control-Request-Method": "POST",
		})
		assert.Equal(t, http.StatusForbidden, res.StatusCode)
		// SDK calls keep their own CORS rules.
		res = do(t, "OPTIONS", base+"/yorkie.v1.YorkieService/ActivateClient", "", map[string]string{
			"Origin": "https://app.example", "Access-Control-Request-Method": "POST",
		})
		assert.Equal(t, http.StatusNoContent, res.StatusCode)
		assert.Empty(t, res.Header.Get("Access-Control-Allow-Credentials"))
	})

	t.Run("Dashboard", func(t *testing.T) {
		for _, p := range []string{"/dashboard/", "/dashboard/projects/app/documents"} {
			res := do(t, "GET", base+p, "", nil)
			require.Equal(t, http.StatusOK, res.StatusCode, p)
			assert.Equal(t, "<html>dashboard</html>", readBody(t, res), p)
		}
		res := do(t, "GET", base+"/dashboard", "", nil)
		assert.Equal(t, http.StatusMovedPermanently, res.StatusCode)
		assert.Equal(t, "/dashboard/", res.Header.Get("Location"))
		res = do(t, "GET", base+"/dashboard/assets/app.js", "", nil)
		require.Equal(t, http.StatusOK, res.StatusCode)
		assert.Equal(t, "console.log(1)", readBody(t, res))
		assert.Contains(t, res.Header.Get("Cache-Control"), "immutable")
		for _, p := range []string{"/dashboard/assets/missing.js", "/dashboard/../go.mod", "/dashboard/%2e%2e/go.mod"} {
			res = do(t, "GET", base+p, "", nil)
			assert.NotEqual(t, "console.log(1)", readBody(t, res), p)
			assert.NotContains(t, []int{http.StatusInternalServerError}, res.StatusCode, p)
		}
		res = do(t, "GET", base+"/dashboard/assets/missing.js", "", nil)
		assert.Equal(t, http.StatusNotFound, res.StatusCode)
		// The dashboard's GitHub link, under its base, goes to /auth/.
		res = do(t, "GET", base+"/dashboard/auth/github/login?x=1", "", nil)
		assert.Equal(t, http.StatusTemporaryRedirect, res.StatusCode)
		assert.Equal(t, "/auth/github/login?x=1", res.Header.Get("Location"))
	})
}

// TestGitHubLogIn logs in through a stand-in GitHub the test starts.
func TestGitHubLogIn(t *testing.T) {
	var userLogin atomic.Value
	userLogin.Store("octo")
	gh := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/login/oauth/access_token":
			_ = r.ParseForm()
			if r.Form.Get("client_secret") != "gh-secret" || r.Form.Get("code") != "good-code" {
				_ = json.NewEncoder(w).Encode(map[string]string{"error": "bad_verification_code"})
				return
			}
			_ = json.NewEncoder(w).Encode(map[string]string{"access_token": "gh-token", "token_type": "bearer"})
		case "/user":
			if r.Header.Get("Authorization") != "Bearer gh-token" {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			_ = json.NewEncoder(w).Encode(map[string]string{"login": userLogin.Load().(string)})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(gh.Close)
	srv := servertest.Start(t, func(c *server.Config) {
		c.Admin.GitHub = admin.GitHubSettings{
			ClientID: "gh-client", ClientSecret: "gh-secret",
			RedirectURL: "http://127.0.0.1/auth/github/callback", CallbackRedirectURL: "/dashboard/",
			AuthURL: gh.URL + "/login/oauth/authorize", TokenURL: gh.URL + "/login/oauth/access_token", UserURL: gh.URL + "/user",
		}
	})
	base := servertest.BaseURL(srv)
	start := func() string {
		res := do(t, "GET", base+"/auth/github/login", "", nil)
		require.Equal(t, http.StatusTemporaryRedirect, res.StatusCode)
		loc, err := url.Parse(res.Header.Get("Location"))
		require.NoError(t, err)
		require.Equal(t, "/login/oauth/authorize", loc.Path)
		require.Equal(t, "gh-client", loc.Query().Get("client_id"))
		return loc.Query().Get("state")
	}
	state := start()
	// A forged state or a bad code logs no one in.
	res := do(t, "GET", base+"/auth/github/callback?state=forged&code=good-code", "", nil)
	assert.Equal(t, http.StatusBadRequest, res.StatusCode)
	assert.Nil(t, sessionCookie(res))
	res = do(t, "GET", base+"/auth/github/callback?state="+state+"&code=bad-code", "", nil)
	assert.Equal(t, http.StatusBadGateway, res.StatusCode)
	assert.Nil(t, sessionCookie(res))
	// A state is used once.
	res = do(t, "GET", base+"/auth/github/callback?state="+state+"&code=good-code", "", nil)
	assert.Equal(t, http.StatusBadRequest, res.StatusCode)

	res = do(t, "GET", base+"/auth/github/callback?state="+start()+"&code=good-code", "", nil)
	require.Equal(t, http.StatusTemporaryRedirect, res.StatusCode)
	assert.Equal(t, "/dashboard/", res.Header.Get("Location"))
	c := sessionCookie(res)
	require.NotNil(t, c)
	res = do(t, "GET", base+"/auth/me", "", map[string]string{"Cookie": c.Name + "=" + c.Value})
	require.Equal(t, http.StatusOK, res.StatusCode)
	var me map[string]string
	require.NoError(t, json.NewDecoder(res.Body).Decode(&me))
	assert.Equal(t, map[string]string{"authProvider": "github", "username": "octo"}, me)
	// The GitHub account has no password to log in with.
	res = do(t, "POST", base+"/auth/login", `{"username":"octo","password":"anything1!"}`, map[string]string{"Content-Type": "application/json"})
	assert.Equal(t, http.StatusUnauthorized, res.StatusCode)

	// A GitHub login that names a password account does not log in to it.
	userLogin.Store("admin")
	res = do(t, "GET", base+"/auth/github/callback?state="+start()+"&code=good-code", "", nil)
	assert.Equal(t, http.StatusConflict, res.StatusCode)
	assert.Nil(t, sessionCookie(res))
}
