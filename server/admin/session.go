package admin

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// Cookie sessions of the dashboard, as upstream serves them under /auth/:
//
//	POST /auth/login   {"username", "password"} -> sets the session cookie
//	GET  /auth/me      -> {"authProvider", "username"} of the cookie's user
//	POST /auth/logout  -> clears the cookie
//	GET  /auth/github/login, /auth/github/callback -> GitHub OAuth log-in
//
// The cookie holds an admin token: HttpOnly, Secure, SameSite=Strict,
// Path=/, for a day, as upstream's.
const sessionMaxAge = 24 * time.Hour

// GitHub OAuth endpoints upstream uses by default.
const (
	DefaultGitHubAuthURL       = "https://github.com/login/oauth/authorize"
	DefaultGitHubTokenURL      = "https://github.com/login/oauth/access_token"
	DefaultGitHubDeviceAuthURL = "https://github.com/login/device/code"
	DefaultGitHubUserURL       = "https://api.github.com/user"
)

// GitHubSettings configure log-in with GitHub (upstream's --auth-github-*
// flags). It is on when ClientID is set.
type GitHubSettings struct {
	ClientID     string
	ClientSecret string
	// RedirectURL is this server's callback, registered with the GitHub
	// app: https://<server>/auth/github/callback.
	RedirectURL string
	// CallbackRedirectURL is where the browser goes once logged in (the
	// dashboard).
	CallbackRedirectURL string
	AuthURL             string
	TokenURL            string
	DeviceAuthURL       string
	UserURL             string
}

// oauthStateTTL is how long a GitHub log-in may take; maxOAuthStates
// bounds the log-ins in flight.
const (
	oauthStateTTL  = 10 * time.Minute
	maxOAuthStates = 10000
	// maxSessionBody bounds a log-in request's body.
	maxSessionBody = 4 << 10
)

// sessions serves /auth/.
type sessions struct {
	s      *Service
	client *http.Client

	mu     sync.Mutex
	states map[string]time.Time // OAuth state -> issued at
}

// SessionHandler returns the path prefix and handler of the dashboard's
// cookie sessions.
func (s *Service) SessionHandler() (string, http.Handler) {
	h := &sessions{s: s, client: &http.Client{Timeout: 10 * time.Second}, states: make(map[string]time.Time)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /auth/login", h.login)
	mux.HandleFunc("GET /auth/me", h.me)
	mux.HandleFunc("POST /auth/logout", h.logout)
	mux.HandleFunc("GET /auth/github/login", h.githubLogin)
	mux.HandleFunc("GET /auth/github/callback", h.githubCallback)
	return "/auth/", mux
}

func (h *sessions) setCookie(w http.ResponseWriter, token string) {
	http.SetCookie(w, &http.Cookie{
		Name: SessionCookie, Value: token, Path: "/",
		MaxAge: int(sessionMaxAge.Seconds()), HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode,
	})
}

// httpError answers with a status and a one-line reason.
func httpError(w http.ResponseWriter, status int, reason string) {
	http.Error(w, reason, status)
}

// statusOf maps a Connect error of the password check to an HTTP status.
func statusOf(err error) int {
	switch connect.CodeOf(err) {
	case connect.CodeUnauthenticated:
		return http.StatusUnauthorized
	case connect.CodeResourceExhausted:
		return http.StatusTooManyRequests
	case connect.CodeUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

func (h *sessions) login(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Username string `json:"username"`
		Password string `json:"password"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, maxSessionBody)).Decode(&body); err != nil {
		httpError(w, http.StatusBadRequest, "invalid request body: want {\"username\", \"password\"}")
		return
	}
	if body.Username == "" || body.Password == "" {
		httpError(w, http.StatusBadRequest, "username and password are required")
		return
	}
	user, err := h.s.CheckPassword(r.Context(), body.Username, body.Password, r.RemoteAddr)
	if err != nil {
		var cerr *connect.Error
		msg := "log-in failed"
		if errors.As(err, &cerr) {
			msg = cerr.Message()
		}
		httpError(w, statusOf(err), msg)
		return
	}
	token, err := h.s.IssueToken(user)
	if err != nil {
		httpError(w, http.StatusInternalServerError, "internal error")
		return
	}
	h.setCookie(w, token)
	w.WriteHeader(http.StatusOK)
}

func (h *sessions) me(w http.ResponseWriter, r *http.Request) {
	cookie, err := r.Cookie(SessionCookie)
	if err != nil || cookie.Value == "" {
		httpError(w, http.StatusUnauthorized, "not logged in")
		return
	}
	user, err := h.s.userOfToken(r.Context(), cookie.Value)
	if err != nil {
		httpError(w, http.StatusUnauthorized, "not logged in")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(struct {
		AuthProvider string `json:"authProvider"`
		Username     string `json:"username"`
	}{user.AuthProvider, user.Username})
}

func (h *sessions) logout(w http.ResponseWriter, _ *http.Request) {
	http.SetCookie(w, &http.Cookie{
		Name: SessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode,
	})
	w.WriteHeader(http.StatusOK)
}

// newState records a fresh OAuth state.
func (h *sessions) newState() string {
	var b [24]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	state := base64.RawURLEncoding.EncodeToString(b[:])
	now := h.s.cfg.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	for k, at := range h.states {
		if now.Sub(at) > oauthStateTTL {
			delete(h.states, k)
		}
	}
	if len(h.states) >= maxOAuthStates {
		clear(h.states)
	}
	h.states[state] = now
	return state
}

// takeState consumes a state: true when it was issued and is fresh.
func (h *sessions) takeState(state string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	at, ok := h.states[state]
	delete(h.states, state)
	return ok && h.s.cfg.Now().Sub(at) <= oauthStateTTL
}

func (h *sessions) githubLogin(w http.ResponseWriter, r *http.Request) {
	gh := h.s.cfg.GitHub
	if gh.ClientID == "" {
		httpError(w, http.StatusNotFound, "GitHub log-in is not configured on this server (--auth-github-client-id)")
		return
	}
	q := url.Values{
		"client_id": {gh.ClientID}, "redirect_uri": {gh.RedirectURL}, "response_type": {"code"},
		"scope": {"user:email"}, "state": {h.newState()},
	}
	sep := "?"
	if strings.Contains(gh.AuthURL, "?") {
		sep = "&"
	}
	http.Redirect(w, r, gh.AuthURL+sep+q.Encode(), http.StatusTemporaryRedirect)
}

func (h *sessions) githubCallback(w http.ResponseWriter, r *http.Request) {
	gh := h.s.cfg.GitHub
	if gh.ClientID == "" {
		httpError(w, http.StatusNotFound, "GitHub log-in is not configured on this server")
		return
	}
	if !h.takeState(r.URL.Query().Get("state")) {
		httpError(w, http.StatusBadRequest, "invalid or expired state: start the GitHub log-in again")
		return
	}
	login, err := h.githubUser(r.Context(), r.URL.Query().Get("code"))
	if err != nil {
		h.s.logger.WarnContext(r.Context(), "GitHub log-in failed", "error", err)
		httpError(w, http.StatusBadGateway, "GitHub log-in failed")
		return
	}
	user, err := h.s.db.FindUserByName(r.Context(), login)
	if errors.Is(err, database.ErrUserNotFound) {
		user, err = h.s.db.CreateExternalUser(r.Context(), login, "github")
		if errors.Is(err, database.ErrUserAlreadyExists) { // a racing log-in made it
			user, err = h.s.db.FindUserByName(r.Context(), login)
		}
	}
	if err != nil {
		h.s.logger.ErrorContext(r.Context(), "GitHub log-in failed", "error", err)
		httpError(w, http.StatusInternalServerError, "internal error")
		return
	}
	// A password account of the same name is not GitHub's to log in to.
	if user.AuthProvider != "github" {
		httpError(w, http.StatusConflict, fmt.Sprintf("the name %q belongs to an account with a password", login))
		return
	}
	token, err := h.s.IssueToken(user)
	if err != nil {
		httpError(w, http.StatusInternalServerError, "internal error")
		return
	}
	h.setCookie(w, token)
	http.Redirect(w, r, gh.CallbackRedirectURL, http.StatusTemporaryRedirect)
}

// githubUser trades the code for an access token and returns the login
// of the user it belongs to.
func (h *sessions) githubUser(ctx context.Context, code string) (string, error) {
	gh := h.s.cfg.GitHub
	if code == "" {
		return "", errors.New("no code")
	}
	form := url.Values{
		"client_id": {gh.ClientID}, "client_secret": {gh.ClientSecret}, "code": {code},
		"redirect_uri": {gh.RedirectURL}, "grant_type": {"authorization_code"},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, gh.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return "", fmt.Errorf("token request: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	var tok struct {
		AccessToken string `json:"access_token"`
		Error       string `json:"error"`
	}
	if err := h.getJSON(req, &tok); err != nil {
		return "", fmt.Errorf("exchange code: %w", err)
	}
	if tok.AccessToken == "" {
		return "", fmt.Errorf("exchange code: no access token (%s)", tok.Error)
	}
	req, err = http.NewRequestWithContext(ctx, http.MethodGet, gh.UserURL, nil)
	if err != nil {
		return "", fmt.Errorf("user request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	req.Header.Set("Accept", "application/json")
	var u struct {
		Login string `json:"login"`
	}
	if err := h.getJSON(req, &u); err != nil {
		return "", fmt.Errorf("read user: %w", err)
	}
	if err := validateUsername(u.Login); err != nil {
		return "", fmt.Errorf("GitHub login: %w", err)
	}
	return u.Login, nil
}

func (h *sessions) getJSON(req *http.Request, into any) error {
	res, err := h.client.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = res.Body.Close() }()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: status %d", req.Method, req.URL.Redacted(), res.StatusCode)
	}
	return json.NewDecoder(io.LimitReader(res.Body, 1<<20)).Decode(into)
}
