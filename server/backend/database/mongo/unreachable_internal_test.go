package mongo

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// clearedPool stands in for the driver's unexported error for a pool it
// cleared after another call's connection broke. A real one comes only when
// a call loses a race with the database's death, as TestOutageAndRecovery's
// calls sometimes do.
type clearedPool struct{}

func (clearedPool) Error() string   { return "connection pool was cleared" }
func (clearedPool) Retryable() bool { return true }

// TestClearedPoolIsUnavailable: a call that found its connection pool
// cleared is ErrUnavailable, which callers retry; an error of the call
// itself is not.
func TestClearedPoolIsUnavailable(t *testing.T) {
	require.ErrorIs(t, wrapErr("load document", fmt.Errorf("find: %w", clearedPool{})), database.ErrUnavailable)
	require.NotErrorIs(t, wrapErr("load document", errors.New("unknown operator")), database.ErrUnavailable)
}
