package certfile_test

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/yorkie-affinity/yorkie/server/certfile"
	"github.com/yorkie-affinity/yorkie/server/certfile/certtest"
)

// clock is a clock the test moves.
type clock struct{ now atomic.Int64 }

func (c *clock) Now() time.Time            { return time.Unix(0, c.now.Load()) }
func (c *clock) Add(d time.Duration)       { c.now.Add(int64(d)) }
func newClock() *clock                     { c := &clock{}; c.now.Store(time.Now().UnixNano()); return c }
func serial(r *certfile.Reloader) string   { return r.Certificate().Leaf.SerialNumber.String() }
func link(t *testing.T, target, at string) { require.NoError(t, os.Symlink(target, at)) }

// TestReloadThroughSymlinks: certificates mounted as Kubernetes mounts
// secrets (files that are symlinks into a directory swapped by renaming a
// symlink) are picked up once the check interval passed, and not before.
func TestReloadThroughSymlinks(t *testing.T) {
	ca := certtest.NewCA(t, "test CA")
	dir := t.TempDir()
	v1, v2 := filepath.Join(dir, "v1"), filepath.Join(dir, "v2")
	require.NoError(t, os.Mkdir(v1, 0o700))
	require.NoError(t, os.Mkdir(v2, 0o700))
	_, first := ca.WriteLeaf(t, v1, "tls", certtest.Leaf{})
	_, second := ca.WriteLeaf(t, v2, "tls", certtest.Leaf{})
	link(t, "v1", filepath.Join(dir, "data"))
	link(t, "data/tls.crt", filepath.Join(dir, "tls.crt"))
	link(t, "data/tls.key", filepath.Join(dir, "tls.key"))

	clk := newClock()
	r, err := certfile.New(certfile.Config{
		Name: "rpc", CertFile: filepath.Join(dir, "tls.crt"), KeyFile: filepath.Join(dir, "tls.key"),
		CheckInterval: time.Minute, Now: clk.Now, Registerer: prometheus.NewRegistry(),
	})
	require.NoError(t, err)
	assert.Equal(t, first.String(), serial(r))

	// Swap the data link, as the kubelet does.
	link(t, "v2", filepath.Join(dir, "data.new"))
	require.NoError(t, os.Rename(filepath.Join(dir, "data.new"), filepath.Join(dir, "data")))
	assert.Equal(t, first.String(), serial(r), "not looked at before the interval passed")
	clk.Add(time.Minute)
	assert.Equal(t, second.String(), serial(r), "picked up once the interval passed")
	clk.Add(time.Minute)
	assert.Equal(t, second.String(), serial(r), "unchanged files are not loaded again")
}
