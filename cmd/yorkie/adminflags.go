package main

import (
	"flag"
	"strings"
	"time"

	"github.com/yorkie-affinity/yorkie/server/admin"
)

// serverAdminFlags are the flags of the AdminService. Each also answers to
// upstream's name, so existing command lines keep working.
type serverAdminFlags struct {
	secret, user, password string
	duration               time.Duration
	signUp                 bool
	maxProjects            int
	dashboardDir           string
	adminOrigins           string
	github                 admin.GitHubSettings
}

func adminFlags(fs *flag.FlagSet) *serverAdminFlags {
	f := &serverAdminFlags{}
	for _, name := range []string{"admin-token-secret", "backend-secret-key"} {
		fs.StringVar(&f.secret, name, "", "secret signing admin tokens (default: one the database keeps for the cluster)")
	}
	for _, name := range []string{"admin-token-duration", "backend-admin-token-duration"} {
		fs.DurationVar(&f.duration, name, admin.DefaultTokenDuration, "how long an admin token stays valid")
	}
	for _, name := range []string{"auth-admin-user", "backend-admin-user"} {
		fs.StringVar(&f.user, name, admin.DefaultUser, "name of the admin account created at start if missing")
	}
	for _, name := range []string{"auth-admin-password", "backend-admin-password"} {
		fs.StringVar(&f.password, name, admin.DefaultPassword, "password of that account when it is created")
	}
	fs.BoolVar(&f.signUp, "auth-signup-enabled", true, "let anyone create an account with SignUp (false: only the admin account and accounts made before)")
	fs.IntVar(&f.maxProjects, "auth-max-projects-per-user", admin.DefaultMaxProjectsPerUser, "most projects one user may own; 0 or negative: no bound")
	fs.StringVar(&f.dashboardDir, "dashboard-dir", "", "serve the dashboard build in this directory under /dashboard/ on the RPC port")
	fs.StringVar(&f.adminOrigins, "admin-allowed-origins", "", "comma-separated web origins (besides the server's own) allowed to call the AdminService and /auth/ with credentials, e.g. a dashboard served elsewhere")
	gh := &f.github
	fs.StringVar(&gh.ClientID, "auth-github-client-id", "", "GitHub OAuth client ID (set: log-in with GitHub is on)")
	fs.StringVar(&gh.ClientSecret, "auth-github-client-secret", "", "GitHub OAuth client secret")
	fs.StringVar(&gh.RedirectURL, "auth-github-redirect-url", "http://localhost:8080/auth/github/callback", "GitHub OAuth callback URL of this server")
	fs.StringVar(&gh.CallbackRedirectURL, "auth-github-callback-redirect-url", "http://localhost:5173/dashboard", "where the browser goes after a GitHub log-in")
	fs.StringVar(&gh.UserURL, "auth-github-user-url", admin.DefaultGitHubUserURL, "GitHub user API URL")
	fs.StringVar(&gh.AuthURL, "auth-github-auth-url", admin.DefaultGitHubAuthURL, "GitHub OAuth2 authorization URL")
	fs.StringVar(&gh.TokenURL, "auth-github-token-url", admin.DefaultGitHubTokenURL, "GitHub OAuth2 token URL")
	fs.StringVar(&gh.DeviceAuthURL, "auth-github-device-auth-url", admin.DefaultGitHubDeviceAuthURL, "GitHub OAuth2 device authorization URL (accepted for compatibility)")
	return f
}

// origins returns the --admin-allowed-origins list.
func (f *serverAdminFlags) origins() []string {
	var out []string
	for _, o := range strings.Split(f.adminOrigins, ",") {
		if o = strings.TrimRight(strings.TrimSpace(o), "/"); o != "" {
			out = append(out, o)
		}
	}
	return out
}

// settings returns the AdminService settings. A password given on the
// command line (or in the config file) is applied to an existing admin
// account too: that is how an operator rotates it.
func (f *serverAdminFlags) settings(fs *flag.FlagSet) admin.Settings {
	reset := false
	fs.Visit(func(fl *flag.Flag) {
		reset = reset || fl.Name == "auth-admin-password" || fl.Name == "backend-admin-password"
	})
	maxProjects := f.maxProjects
	if maxProjects == 0 {
		maxProjects = -1
	}
	return admin.Settings{
		TokenSecret: f.secret, TokenDuration: f.duration,
		User: f.user, Password: f.password, ResetPassword: reset,
		SignUpDisabled: !f.signUp, MaxProjectsPerUser: maxProjects, GitHub: f.github,
		Version: version, BuildDate: buildDate,
	}
}
