package affinity

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"strconv"
)

// ErrMalformedSessionKey: a session key that does not decode to host:port.
var ErrMalformedSessionKey = errors.New("malformed session key")

// maxSessionKeyLen bounds what a client may make us decode: a base64 host:port
// never needs more (255-byte host name, colon, 5-digit port).
const maxSessionKeyLen = 512

// SessionKey names a node: the standard, padded base64 of its advertised
// host:port. Envoy's header-based stateful session uses the same encoding, so a
// proxy can route by it without knowing anything of Yorkie.
func SessionKey(addr string) string {
	return base64.StdEncoding.EncodeToString([]byte(addr))
}

// ParseSessionKey decodes a session key into the host:port it names. It checks
// only the form: whether the address is a member is for the caller to decide,
// since a key that arrives in a request is a hint, never an address to dial.
func ParseSessionKey(key string) (string, error) {
	if key == "" || len(key) > maxSessionKeyLen {
		return "", fmt.Errorf("%w: length %d", ErrMalformedSessionKey, len(key))
	}
	raw, err := base64.StdEncoding.Strict().DecodeString(key)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrMalformedSessionKey, err)
	}
	// The decoder skips line breaks: a key must be the encoding of what it
	// names, so that one address has one key.
	if base64.StdEncoding.EncodeToString(raw) != key {
		return "", fmt.Errorf("%w: not in canonical base64", ErrMalformedSessionKey)
	}
	addr := string(raw)
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return "", fmt.Errorf("%w: %q is not host:port", ErrMalformedSessionKey, addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 {
		return "", fmt.Errorf("%w: bad port in %q", ErrMalformedSessionKey, addr)
	}
	return addr, nil
}
