package main

import (
	"flag"
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
	return f
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
		SignUpDisabled: !f.signUp, MaxProjectsPerUser: maxProjects,
		Version: version, BuildDate: buildDate,
	}
}
