package fault_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/yorkie-affinity/yorkie/server/fault"
)

func TestIsRetryable(t *testing.T) {
	busy := fault.NewRetryable("store busy")
	other := fault.NewRetryable("store busy")
	if !fault.IsRetryable(fmt.Errorf("find client: %w", busy)) {
		t.Fatal("a wrapped retryable sentinel is not retryable")
	}
	if !fault.IsRetryable(fmt.Errorf("two causes: %w: %w", errors.New("cause"), busy)) {
		t.Fatal("a retryable sentinel beside another cause is not retryable")
	}
	if fault.IsRetryable(errors.New("disk on fire")) || fault.IsRetryable(nil) {
		t.Fatal("an unmarked error is retryable")
	}
	if errors.Is(busy, other) {
		t.Fatal("two sentinels with the same text are one")
	}
}
