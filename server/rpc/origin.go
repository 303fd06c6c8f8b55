package rpc

import (
	"fmt"
	"net/url"
	"path"
	"strings"

	"connectrpc.com/connect"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/rpc/errinfo"
)

// checkOrigin refuses a browser call (one with an Origin header) to a
// project whose allowed origins do not list its origin, as upstream does.
// A project with no allowed origins, and calls without an Origin (servers,
// native apps), pass.
func checkOrigin(p *database.ProjectInfo, origin string) error {
	if len(p.AllowedOrigins) == 0 || origin == "" {
		return nil
	}
	for _, pattern := range p.AllowedOrigins {
		if matchOrigin(pattern, origin) {
			return nil
		}
	}
	return errinfo.New(connect.CodePermissionDenied, errinfo.CodePermissionDenied,
		fmt.Errorf("origin %q is not among the project's allowed origins", origin))
}

// matchOrigin reports whether origin matches pattern: "*", the same
// origin, or the same scheme and port with a host whose labels match the
// pattern's (each label may be a glob such as *).
func matchOrigin(pattern, origin string) bool {
	if pattern == "*" || pattern == origin {
		return pattern != ""
	}
	pu, err1 := url.Parse(pattern)
	ou, err2 := url.Parse(origin)
	if err1 != nil || err2 != nil || !plainOrigin(pu) || !plainOrigin(ou) {
		return false
	}
	if !strings.EqualFold(pu.Scheme, ou.Scheme) || pu.Port() != ou.Port() {
		return false
	}
	pl := strings.Split(strings.ToLower(pu.Hostname()), ".")
	ol := strings.Split(strings.ToLower(ou.Hostname()), ".")
	if len(pl) != len(ol) {
		return false
	}
	for i := range pl {
		if ok, err := path.Match(pl[i], ol[i]); ol[i] == "" || err != nil || !ok {
			return false
		}
	}
	return true
}

func plainOrigin(u *url.URL) bool {
	return u.Scheme != "" && u.Host != "" && u.User == nil && u.Path == "" && u.RawQuery == "" && u.Fragment == ""
}
