package document

import (
	"os"
	"testing"
)

// TestTreeMatchesSDKStress is TestTreeMatchesSDK with many more random sessions; it runs
// only when YORKIE_TREE_STRESS names a seed.
func TestTreeMatchesSDKStress(t *testing.T) {
	seed := os.Getenv("YORKIE_TREE_STRESS")
	if seed == "" {
		t.Skip("set YORKIE_TREE_STRESS=<seed> to run")
	}
	for _, s := range runTreeSDK(t, seed, "80", "400") {
		t.Run(s.Name, func(t *testing.T) { checkTreeSession(t, s) })
	}
}
