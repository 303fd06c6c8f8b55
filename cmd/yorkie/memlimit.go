package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
)

// memoryLimitShare is the share of a container's memory limit the Go
// runtime is told to stay under: the rest is for what it does not count
// (thread stacks outside the heap, the binary, page cache charged to the
// container) and for the time the collector needs to catch up.
const memoryLimitShare = 0.9

// unlimitedMemory is where cgroup v1 values start to mean "no limit" (the
// kernel reports the largest page-aligned int64).
const unlimitedMemory = 1 << 60

// applyContainerMemoryLimit sets the runtime's soft memory limit to 90 % of
// the memory limit of the container the server runs in, unless GOMEMLIMIT
// is set (GOMEMLIMIT=off keeps the runtime's default, no limit). Without a
// limit the heap grows to twice what is live before each collection, so a
// node holding many idle streams would be killed by the container for
// memory it does not need; with it the collector runs earlier instead.
func applyContainerMemoryLimit(logger *slog.Logger, cgroupRoot, selfCgroup string) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	limit, ok := containerMemoryLimit(cgroupRoot, selfCgroup)
	if !ok {
		return
	}
	soft := int64(float64(limit) * memoryLimitShare)
	debug.SetMemoryLimit(soft)
	logger.Info("memory limit from the container", "container_bytes", limit, "soft_limit_bytes", soft)
}

// containerMemoryLimit reads the memory limit of this process's cgroup
// (selfCgroup is the content of /proc/self/cgroup) under cgroupRoot
// (/sys/fs/cgroup), cgroup v2 or v1. It reports false when there is no
// limit or it cannot be read.
func containerMemoryLimit(cgroupRoot, selfCgroup string) (int64, bool) {
	v2, v1 := cgroupPaths(selfCgroup)
	var candidates []string
	if v2 != "" {
		candidates = append(candidates, filepath.Join(cgroupRoot, v2, "memory.max"))
	}
	candidates = append(candidates, filepath.Join(cgroupRoot, "memory.max"))
	if v1 != "" {
		candidates = append(candidates, filepath.Join(cgroupRoot, "memory", v1, "memory.limit_in_bytes"))
	}
	candidates = append(candidates, filepath.Join(cgroupRoot, "memory", "memory.limit_in_bytes"))
	// Inside a container without its own cgroup namespace the process's
	// path may not exist under the mount; the next candidate is the mount's
	// own file, which is the container's then.
	for _, path := range candidates {
		raw, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		text := strings.TrimSpace(string(raw))
		if text == "max" {
			return 0, false
		}
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil || n <= 0 || n >= unlimitedMemory {
			return 0, false
		}
		return n, true
	}
	return 0, false
}

// cgroupPaths picks, from /proc/self/cgroup, the cgroup v2 path (the "0::"
// line) and the v1 memory controller's path.
func cgroupPaths(selfCgroup string) (v2, v1 string) {
	for _, line := range strings.Split(selfCgroup, "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			v2 = parts[2]
		case slices.Contains(strings.Split(parts[1], ","), "memory"):
			v1 = parts[2]
		}
	}
	return v2, v1
}
