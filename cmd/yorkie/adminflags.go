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
	return f
}

func (f *serverAdminFlags) settings() admin.Settings {
	return admin.Settings{
		TokenSecret: f.secret, TokenDuration: f.duration,
		User: f.user, Password: f.password,
		Version: version, BuildDate: buildDate,
	}
}
