// Package validate checks the IDs, keys and packs a request carries.
//
// The RPC layer runs the checks before any layer below it sees a request.
package validate

import (
	"errors"
	"fmt"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
)

// Limits on identifiers a request may carry. Client and document IDs are 24 hex
// characters in practice; the bounds leave room without letting a request
// smuggle arbitrary data into logs and keys.
const (
	maxIDLength = 64
	// MaxKeyLength bounds a document key.
	MaxKeyLength = 120
)

// errMissingChangePack is reported when a call that needs a change pack has none.
var errMissingChangePack = errors.New("change_pack is required")

// ClientID checks that id is lowercase, even-length hex: the form of
// an actor ID, which clients hex-decode into actor bytes.
func ClientID(id string) error {
	if id == "" {
		return errors.New("client_id is required")
	}
	if len(id) > maxIDLength || len(id)%2 != 0 {
		return fmt.Errorf("client_id %q: want lowercase hex of even length up to %d", Truncate(id), maxIDLength)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return fmt.Errorf("client_id %q: want lowercase hex of even length", Truncate(id))
		}
	}
	return nil
}

// DocumentID checks that a document ID is present and plausible.
// Document IDs are opaque to clients, so only length and charset are checked.
func DocumentID(id string) error {
	if id == "" {
		return errors.New("document_id is required")
	}
	if len(id) > maxIDLength || !isKeyText(id) {
		return fmt.Errorf("document_id %q: want up to %d letters or digits", Truncate(id), maxIDLength)
	}
	return nil
}

// DocumentKey checks a document key as Yorkie accepts them: 1 to 120
// characters among letters, digits and "-._~".
func DocumentKey(key string) error {
	if key == "" {
		return errors.New("change_pack.document_key is required")
	}
	if len(key) > MaxKeyLength || !isKeyText(key) {
		return fmt.Errorf("document key %q: want 1 to %d characters among letters, digits and \"-._~\"",
			Truncate(key), MaxKeyLength)
	}
	return nil
}

// isKeyText reports whether s holds only letters, digits and "-._~".
func isKeyText(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '-', c == '.', c == '_', c == '~':
		default:
			return false
		}
	}
	return true
}

// Pack checks that a change pack is present.
func Pack(pack *api.ChangePack) error {
	if pack == nil {
		return errMissingChangePack
	}
	return nil
}

// Truncate shortens a rejected value before it is echoed in an error message.
func Truncate(s string) string {
	const limit = 80
	if len(s) > limit {
		return s[:limit] + "..."
	}
	return s
}
