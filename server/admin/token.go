package admin

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Token errors, which the service answers with unauthenticated.
var (
	// ErrInvalidToken: the token is malformed or not signed with the secret.
	ErrInvalidToken = errors.New("invalid admin token")
	// ErrExpiredToken: the token was valid but its expiry has passed.
	ErrExpiredToken = errors.New("expired admin token")
)

// tokenHeader is the fixed JOSE header of every token: a JWT signed with
// HMAC-SHA256, the form upstream's tokens take, so tools that inspect them
// keep working.
var tokenHeader = base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))

// claims is what a token asserts: who, until when, and which of the
// user's passwords it was issued under (a keyed digest of its hash, so
// changing the password ends every token issued before).
type claims struct {
	Username  string `json:"username"`
	ExpiresAt int64  `json:"exp"`
	Password  string `json:"pwv"`
}

// tokens issues and checks admin tokens with one secret.
type tokens struct {
	secret   []byte
	duration time.Duration
	now      func() time.Time
}

func (t *tokens) sign(signingInput string) string {
	mac := hmac.New(sha256.New, t.secret)
	mac.Write([]byte(signingInput))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// passwordVersion is a keyed digest of a password hash: it names the
// password in a token without telling anything about it.
func (t *tokens) passwordVersion(hashedPassword string) string {
	return t.sign("password:" + hashedPassword)[:16]
}

// samePassword reports whether the token was issued under the password
// whose hash is given.
func (t *tokens) samePassword(c claims, hashedPassword string) bool {
	return hmac.Equal([]byte(c.Password), []byte(t.passwordVersion(hashedPassword)))
}

// issue returns a token for the user that expires after the duration.
func (t *tokens) issue(username, hashedPassword string) (string, error) {
	body, err := json.Marshal(claims{
		Username: username, ExpiresAt: t.now().Add(t.duration).Unix(), Password: t.passwordVersion(hashedPassword),
	})
	if err != nil {
		return "", fmt.Errorf("encode token claims: %w", err)
	}
	input := tokenHeader + "." + base64.RawURLEncoding.EncodeToString(body)
	return input + "." + t.sign(input), nil
}

// verify returns the claims of a valid, unexpired token.
func (t *tokens) verify(token string) (claims, error) {
	head, rest, ok := strings.Cut(token, ".")
	payload, sig, ok2 := strings.Cut(rest, ".")
	if !ok || !ok2 || head != tokenHeader {
		return claims{}, ErrInvalidToken
	}
	// Compare the signatures in constant time before reading any claim.
	if !hmac.Equal([]byte(sig), []byte(t.sign(head+"."+payload))) {
		return claims{}, ErrInvalidToken
	}
	raw, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return claims{}, ErrInvalidToken
	}
	var c claims
	if err := json.Unmarshal(raw, &c); err != nil || c.Username == "" {
		return claims{}, ErrInvalidToken
	}
	if !t.now().Before(time.Unix(c.ExpiresAt, 0)) {
		return claims{}, ErrExpiredToken
	}
	return c, nil
}
