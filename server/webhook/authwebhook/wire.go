package authwebhook

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// Verb is the access a call needs to a document, as the webhook sees it.
type Verb string

// The verbs of upstream Yorkie's auth webhook.
const (
	Read      Verb = "r"
	ReadWrite Verb = "rw"
)

// Attribute names one document a call touches and the access it needs.
type Attribute struct {
	Key  string `json:"key"`
	Verb Verb   `json:"verb"`
}

// requestBody is the JSON the webhook receives, field for field upstream
// Yorkie's, so existing webhook services work unchanged. A call without
// documents (ActivateClient, Watch) sends "attributes": null, as upstream does.
type requestBody struct {
	Token      string      `json:"token"`
	Method     string      `json:"method"`
	Attributes []Attribute `json:"attributes"`
}

// responseBody is the JSON the webhook answers with.
type responseBody struct {
	Allowed bool   `json:"allowed"`
	Reason  string `json:"reason"`
}

// verdict is what one webhook answer means.
type verdict int

const (
	allowed verdict = iota
	denied
	unauthenticated
	invalid
)

// decodeAnswer reads a webhook's answer the way upstream does: the status
// and the body must agree. 200 with "allowed": true allows; 403 with
// "allowed": false denies; 401 with "allowed": false asks the client for a
// new token. Anything else (another status, a body that is not a JSON
// object, status and body disagreeing) is invalid, and the call fails closed.
func decodeAnswer(status int, body []byte) (verdict, string, error) {
	var res responseBody
	if err := json.Unmarshal(body, &res); err != nil {
		return invalid, "", fmt.Errorf("status %d, body is not the expected JSON: %v", status, err)
	}
	switch {
	case status == http.StatusOK && res.Allowed:
		return allowed, res.Reason, nil
	case status == http.StatusForbidden && !res.Allowed:
		return denied, res.Reason, nil
	case status == http.StatusUnauthorized && !res.Allowed:
		return unauthenticated, res.Reason, nil
	}
	return invalid, res.Reason, fmt.Errorf("status %d does not agree with allowed=%v", status, res.Allowed)
}
