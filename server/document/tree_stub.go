package document

import (
	"fmt"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/document/crdt"
)

// Placeholders until the tree type lands; they refuse everything.

func decodeTreeEdit(*api.Operation_TreeEdit) (Operation, error) {
	return nil, fmt.Errorf("%w: tree edits are not supported yet", ErrInvalidOperation)
}

func decodeTreeStyle(*api.Operation_TreeStyle) (Operation, error) {
	return nil, fmt.Errorf("%w: tree styles are not supported yet", ErrInvalidOperation)
}

func treeFromPB(*api.JSONElement_Tree) (*crdt.Tree, error) {
	return nil, fmt.Errorf("%w: tree elements are not supported yet", ErrInvalidOperation)
}

func treeToPB(t *crdt.Tree) *api.JSONElement_Tree {
	return &api.JSONElement_Tree{}
}

func treeFromBytes(value []byte, createdAt crdt.Ticket) (*crdt.Tree, error) {
	return nil, fmt.Errorf("%w: tree values are not supported yet", ErrInvalidOperation)
}
