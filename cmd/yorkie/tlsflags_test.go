package main

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/yorkie-affinity/yorkie/server/certfile/certtest"
)

// TestServerTLSStartErrors: `yorkie server` with a missing or expired
// certificate stops at once, naming the file and the reason.
func TestServerTLSStartErrors(t *testing.T) {
	dir := t.TempDir()
	ca := certtest.NewCA(t, "test CA")
	expired, _ := ca.WriteLeaf(t, dir, "expired", certtest.Leaf{
		NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-time.Hour),
	})
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--rpc-cert-file", filepath.Join(dir, "none.crt"), "--rpc-key-file", expired.Key}, []string{"none.crt", "no such file"}},
		{[]string{"--rpc-cert-file", expired.Cert, "--rpc-key-file", expired.Key}, []string{"expired.crt", "certificate expired"}},
		{[]string{"--rpc-cert-file", expired.Cert}, []string{"--rpc-cert-file and --rpc-key-file go together"}},
		{[]string{"--profiling-cert-file", expired.Cert, "--profiling-key-file", expired.Key}, []string{"profiling certificate", "certificate expired"}},
	} {
		var stdout, stderr bytes.Buffer
		args := append([]string{"server", "--rpc-port", "0", "--profiling-port", "-1"}, tc.args...)
		assert.Equal(t, 1, run(args, &stdout, &stderr), "%v", tc.args)
		for _, w := range tc.want {
			assert.Contains(t, stderr.String(), w, "%v", tc.args)
		}
	}
}
