package validate

import "testing"

func TestValidateClientID(t *testing.T) {
	for _, id := range []string{"00", "0123456789abcdef01234567"} {
		if err := ClientID(id); err != nil {
			t.Errorf("ClientID(%q): %v", id, err)
		}
	}
	for _, id := range []string{"", "0", "0g", "AB", "0123456789ABCDEF01234567", "ab cd", "ab\x00c"} {
		if err := ClientID(id); err == nil {
			t.Errorf("ClientID(%q) accepted a malformed ID", id)
		}
	}
}

func TestValidateDocumentKey(t *testing.T) {
	for _, key := range []string{"a", "doc-1", "Room_2.v~x"} {
		if err := DocumentKey(key); err != nil {
			t.Errorf("DocumentKey(%q): %v", key, err)
		}
	}
	long := make([]byte, MaxKeyLength+1)
	for i := range long {
		long[i] = 'k'
	}
	for _, key := range []string{"", "a b", "a/b", "é", string(long)} {
		if err := DocumentKey(key); err == nil {
			t.Errorf("DocumentKey(%q) accepted a bad key", key)
		}
	}
}
