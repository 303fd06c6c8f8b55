package authwebhook

import (
	"encoding/json"
	"net/http"
	"testing"
)

// FuzzDecodeAnswer feeds arbitrary statuses and bodies to the answer decoder:
// it must never panic, and must allow only a 200 whose body is a JSON object
// with "allowed": true, deny only a 403 with "allowed" false, and ask for a
// new token only on a 401 with "allowed" false.
func FuzzDecodeAnswer(f *testing.F) {
	f.Add(200, []byte(`{"allowed":true}`))
	f.Add(403, []byte(`{"allowed":false,"reason":"no"}`))
	f.Add(401, []byte(`{"allowed":false,"reason":"expired"}`))
	f.Add(200, []byte(`{"allowed":"true"}`))
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		v, reason, err := decodeAnswer(status, body)
		if err != nil {
			if v != invalid {
				t.Fatalf("error %v with verdict %d", err, v)
			}
			return
		}
		var res responseBody
		if jerr := json.Unmarshal(body, &res); jerr != nil {
			t.Fatalf("accepted a body json rejects: %v", jerr)
		}
		if res.Reason != reason {
			t.Fatalf("reason %q, body says %q", reason, res.Reason)
		}
		switch v {
		case allowed:
			if status != http.StatusOK || !res.Allowed {
				t.Fatalf("allowed status %d allowed=%v", status, res.Allowed)
			}
		case denied:
			if status != http.StatusForbidden || res.Allowed {
				t.Fatalf("denied status %d allowed=%v", status, res.Allowed)
			}
		case unauthenticated:
			if status != http.StatusUnauthorized || res.Allowed {
				t.Fatalf("unauthenticated status %d allowed=%v", status, res.Allowed)
			}
		default:
			t.Fatalf("verdict %d without an error", v)
		}
	})
}
