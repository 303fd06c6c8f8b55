package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cgroupTree writes files (path relative to a new root -> content) and
// returns the root.
func cgroupTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for path, content := range files {
		full := filepath.Join(root, path)
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(content), 0o644))
	}
	return root
}

func TestContainerMemoryLimit(t *testing.T) {
	const v1Self = "9:name=systemd:/\n4:memory:/kubepods/pod1/c1\n1:cpu,cpuacct:/\n0::/\n"
	for _, tc := range []struct {
		name  string
		files map[string]string
		self  string
		want  int64
		found bool
	}{
		{"v2 in its own cgroup", map[string]string{"kubepods/c1/memory.max": "2147483648\n"}, "0::/kubepods/c1\n", 2 << 30, true},
		{"v2 namespaced: the mount's own file", map[string]string{"memory.max": "1073741824\n"}, "0::/\n", 1 << 30, true},
		{"v2 without a limit", map[string]string{"memory.max": "max\n"}, "0::/\n", 0, false},
		{"v1 in its own cgroup", map[string]string{"memory/kubepods/pod1/c1/memory.limit_in_bytes": "536870912\n"}, v1Self, 512 << 20, true},
		{"v1 path not mounted: the mount's own file", map[string]string{"memory/memory.limit_in_bytes": "268435456"}, v1Self, 256 << 20, true},
		{"v1 without a limit", map[string]string{"memory/memory.limit_in_bytes": "9223372036854771712\n"}, v1Self, 0, false},
		{"malformed", map[string]string{"memory.max": "lots\n"}, "0::/\n", 0, false},
		{"no cgroup files", nil, "", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := containerMemoryLimit(cgroupTree(t, tc.files), tc.self)
			assert.Equal(t, tc.found, ok)
			assert.Equal(t, tc.want, got)
		})
	}
}
