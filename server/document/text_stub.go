package document

import (
	"fmt"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/document/crdt"
)

// Placeholders until the text type lands: edits are refused, texts hold nothing.

func decodeEdit(*api.Operation_Edit) (Operation, error) {
	return nil, fmt.Errorf("%w: text edits are not supported yet", ErrInvalidOperation)
}

func decodeStyle(*api.Operation_Style) (Operation, error) {
	return nil, fmt.Errorf("%w: text styles are not supported yet", ErrInvalidOperation)
}

// textFromPB keeps only the text's tickets until the text type lands.
func textFromPB(pb *api.JSONElement_Text) (*crdt.Text, error) {
	createdAt, movedAt, removedAt, err := readTickets(pb)
	if err != nil {
		return nil, err
	}
	t := crdt.NewText(createdAt)
	setTickets(t, movedAt, removedAt)
	return t, nil
}

func textToPB(t *crdt.Text) *api.JSONElement_Text {
	return &api.JSONElement_Text{
		CreatedAt: ticketToPB(t.CreatedAt()),
		MovedAt:   optionalTicketToPB(t.MovedAt()),
		RemovedAt: optionalTicketToPB(t.RemovedAt()),
	}
}
