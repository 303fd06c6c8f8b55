package document

import (
	"fmt"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/document/crdt"
)

// Placeholders until the text type lands; they refuse everything.

func decodeEdit(*api.Operation_Edit) (Operation, error) {
	return nil, fmt.Errorf("%w: text edits are not supported yet", ErrInvalidOperation)
}

func decodeStyle(*api.Operation_Style) (Operation, error) {
	return nil, fmt.Errorf("%w: text styles are not supported yet", ErrInvalidOperation)
}

func textFromPB(*api.JSONElement_Text) (*crdt.Text, error) {
	return nil, fmt.Errorf("%w: text elements are not supported yet", ErrInvalidOperation)
}

func textToPB(t *crdt.Text) *api.JSONElement_Text {
	return &api.JSONElement_Text{}
}
