package server

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// dashboardPrefix is where a dashboard build is served: upstream's
// dashboard is built with base /dashboard.
const dashboardPrefix = "/dashboard/"

// dashboardHandler serves the dashboard build in dir under /dashboard/:
// its files as they are, and index.html for every other path (the
// dashboard routes in the browser). A missing asset is 404, so a broken
// build shows as one.
func dashboardHandler(dir string) (http.Handler, error) {
	index := filepath.Join(dir, "index.html")
	if _, err := os.Stat(index); err != nil {
		return nil, fmt.Errorf("dashboard directory %q: no index.html: %w", dir, err)
	}
	root := os.DirFS(dir)
	files := http.FileServerFS(root)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		if r.URL.Path == "/dashboard" {
			http.Redirect(w, r, dashboardPrefix, http.StatusMovedPermanently)
			return
		}
		rel := strings.TrimPrefix(path.Clean(r.URL.Path), "/dashboard")
		rel = strings.TrimPrefix(rel, "/")
		if strings.HasPrefix(rel, "auth/") {
			// The dashboard links its GitHub log-in under its own base.
			u := *r.URL
			u.Path = "/" + rel
			http.Redirect(w, r, u.RequestURI(), http.StatusTemporaryRedirect)
			return
		}
		if rel != "" && rel != "index.html" {
			if st, err := os.Stat(filepath.Join(dir, filepath.FromSlash(rel))); err == nil && !st.IsDir() {
				if strings.HasPrefix(rel, "assets/") {
					w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
				}
				r2 := r.Clone(r.Context())
				r2.URL.Path = "/" + rel
				files.ServeHTTP(w, r2)
				return
			} else if err != nil && !errors.Is(err, os.ErrNotExist) {
				http.Error(w, "internal error", http.StatusInternalServerError)
				return
			}
			if strings.HasPrefix(rel, "assets/") || path.Ext(rel) != "" {
				http.NotFound(w, r)
				return
			}
		}
		w.Header().Set("Cache-Control", "no-cache")
		http.ServeFile(w, r, index)
	}), nil
}
