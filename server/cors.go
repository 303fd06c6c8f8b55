package server

import (
	"net/http"
	"slices"
	"strings"
)

// corsExposedHeaders are the response headers browsers must let the SDK
// read: gRPC-web carries its status in them, and Connect streams their
// encoding and the protocol version.
var corsExposedHeaders = []string{
	"Grpc-Status", "Grpc-Message", "Grpc-Status-Details-Bin", "Grpc-Encoding", "Grpc-Accept-Encoding",
	"Connect-Protocol-Version", "Connect-Content-Encoding", "Connect-Accept-Encoding",
}

// withCORS lets browser pages call the server across origins, as the Yorkie JS
// SDK does from web apps. allowed lists the permitted origins; empty allows
// every origin; exposed adds response headers pages may read. Preflight
// requests are answered here; other requests pass on with the CORS response
// headers set.
func withCORS(next http.Handler, allowed, exposed []string) http.Handler {
	originAllowed := func(origin string) bool {
		return len(allowed) == 0 || slices.Contains(allowed, origin)
	}
	expose := strings.Join(append(slices.Clone(corsExposedHeaders), exposed...), ", ")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" {
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Add("Vary", "Origin")
		if !originAllowed(origin) {
			if r.Method == http.MethodOptions {
				w.WriteHeader(http.StatusForbidden)
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		h.Set("Access-Control-Allow-Origin", origin)
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
		h.Set("Access-Control-Expose-Headers", expose)
		next.ServeHTTP(w, r)
	})
}
