package server

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// adminPath reports whether a request is for the AdminService or the
// dashboard's sessions: paths that act with an operator's credentials.
func adminPath(p string) bool {
	return strings.HasPrefix(p, "/yorkie.v1.AdminService/") || strings.HasPrefix(p, "/auth/")
}

// withAdminCORS guards the admin paths against other web origins. A
// browser request from the server's own origin (the dashboard it serves)
// or from an origin in allowed passes, with CORS headers allowing
// credentials for the latter; a request from any other origin is refused
// (403) before it reaches a handler, so a web page an operator visits
// cannot log in or act with the operator's session. Requests without an
// Origin (the CLI, scripts) pass. Other paths go to rest.
func withAdminCORS(rest, admin http.Handler, allowed []string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !adminPath(r.URL.Path) {
			rest.ServeHTTP(w, r)
			return
		}
		origin := r.Header.Get("Origin")
		if origin == "" || sameOrigin(origin, r.Host) {
			admin.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Add("Vary", "Origin")
		if !slices.Contains(allowed, origin) {
			http.Error(w, "origin "+origin+" may not call the admin API (see --admin-allowed-origins)", http.StatusForbidden)
			return
		}
		h.Set("Access-Control-Allow-Origin", origin)
		h.Set("Access-Control-Allow-Credentials", "true")
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Add("Vary", "Access-Control-Request-Method")
			h.Add("Vary", "Access-Control-Request-Headers")
			h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
			if reqHeaders := r.Header.Get("Access-Control-Request-Headers"); reqHeaders != "" {
				h.Set("Access-Control-Allow-Headers", strings.TrimSpace(reqHeaders))
			}
			h.Set("Access-Control-Max-Age", "7200")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		h.Set("Access-Control-Expose-Headers", strings.Join(corsExposedHeaders, ", "))
		admin.ServeHTTP(w, r)
	})
}

// sameOrigin reports whether origin names the host the request was sent
// to (any scheme: behind a TLS-terminating proxy the server sees http).
func sameOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, host)
}
