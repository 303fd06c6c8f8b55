package document

import (
	"fmt"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
)

func decodeSet(*api.Operation_Set) (Operation, error) {
	return nil, fmt.Errorf("%w: set: %w", ErrInvalidOperation, errNotYet)
}
func decodeAdd(*api.Operation_Add) (Operation, error) {
	return nil, fmt.Errorf("%w: add: %w", ErrInvalidOperation, errNotYet)
}
func decodeMove(*api.Operation_Move) (Operation, error) {
	return nil, fmt.Errorf("%w: move: %w", ErrInvalidOperation, errNotYet)
}
func decodeRemove(*api.Operation_Remove) (Operation, error) {
	return nil, fmt.Errorf("%w: remove: %w", ErrInvalidOperation, errNotYet)
}
func decodeIncrease(*api.Operation_Increase) (Operation, error) {
	return nil, fmt.Errorf("%w: increase: %w", ErrInvalidOperation, errNotYet)
}
func decodeArraySet(*api.Operation_ArraySet) (Operation, error) {
	return nil, fmt.Errorf("%w: array set: %w", ErrInvalidOperation, errNotYet)
}
