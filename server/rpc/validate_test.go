package rpc

import "testing"

func TestValidateClientID(t *testing.T) {
	for _, id := range []string{"00", "0123456789abcdef01234567"} {
		if err := validateClientID(id); err != nil {
			t.Errorf("validateClientID(%q): %v", id, err)
		}
	}
	for _, id := range []string{"", "0", "0g", "AB", "0123456789ABCDEF01234567", "ab cd", "ab\x00c"} {
		if err := validateClientID(id); err == nil {
			t.Errorf("validateClientID(%q) accepted a malformed ID", id)
		}
	}
}

func TestValidateDocumentKey(t *testing.T) {
	for _, key := range []string{"a", "doc-1", "Room_2.v~x"} {
		if err := validateDocumentKey(key); err != nil {
			t.Errorf("validateDocumentKey(%q): %v", key, err)
		}
	}
	long := make([]byte, maxKeyLength+1)
	for i := range long {
		long[i] = 'k'
	}
	for _, key := range []string{"", "a b", "a/b", "é", string(long)} {
		if err := validateDocumentKey(key); err == nil {
			t.Errorf("validateDocumentKey(%q) accepted a bad key", key)
		}
	}
}
