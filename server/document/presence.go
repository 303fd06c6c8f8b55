package document

import (
	"encoding/json"
	"fmt"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
)

// presenceChange is a change's presence part: a full presence to put, or a clear.
type presenceChange struct {
	clear bool
	data  map[string]string
}

// decodePresenceChange reads a change's presence part (nil when it has none). The SDK
// throws on any type but PUT and CLEAR, and parses every value as JSON.
func decodePresenceChange(pc *api.PresenceChange) (*presenceChange, error) {
	if pc == nil {
		return nil, nil
	}
	switch pc.GetType() {
	case api.PresenceChange_CHANGE_TYPE_CLEAR:
		return &presenceChange{clear: true}, nil
	case api.PresenceChange_CHANGE_TYPE_PUT:
		if pc.GetPresence() == nil {
			return nil, fmt.Errorf("%w: presence put without a presence", ErrInvalidOperation)
		}
		data := make(map[string]string, len(pc.GetPresence().GetData()))
		for k, v := range pc.GetPresence().GetData() {
			if !json.Valid([]byte(v)) {
				return nil, fmt.Errorf("%w: presence value of %q is not JSON", ErrInvalidOperation, k)
			}
			data[k] = v
		}
		return &presenceChange{data: data}, nil
	default:
		return nil, fmt.Errorf("%w: presence change of type %s", ErrInvalidOperation, pc.GetType())
	}
}
