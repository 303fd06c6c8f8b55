package eventwebhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"
)

// The wire format of upstream Yorkie's event webhook.
const (
	// DocumentRootChanged is the event of a document whose content changed.
	DocumentRootChanged = "DocumentRootChanged"
	// SignatureHeader carries "sha256=" and the lowercase hex HMAC-SHA256 of
	// the body, keyed with the project's secret key.
	SignatureHeader = "X-Signature-256"
	// TimeFormat is the form of "issuedAt": UTC, milliseconds, a literal Z.
	TimeFormat = "2006-01-02T15:04:05.000Z"
)

// Body is the JSON an event webhook receives.
type Body struct {
	Type       string     `json:"type"`
	Attributes Attributes `json:"attributes"`
}

// Attributes name the document an event is about and when it was issued.
type Attributes struct {
	Key      string `json:"key"`
	IssuedAt string `json:"issuedAt"`
}

func encodeBody(event, docKey string, issued time.Time) ([]byte, error) {
	return json.Marshal(Body{Type: event, Attributes: Attributes{Key: docKey, IssuedAt: issued.UTC().Format(TimeFormat)}})
}

// Sign returns the SignatureHeader value for body under secret, so that a
// receiver can check an event came from the server and was not altered.
func Sign(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}
