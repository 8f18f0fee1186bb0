// Package memlimit gives the Go runtime a soft memory limit below the
// container's: with the collector's default (collect when the heap
// doubles) a process whose live heap peaks at L grows to about 2L, and a
// container limited below that is killed by the kernel for garbage the
// collector would have freed. With a soft limit the collector runs more
// often as the heap nears it instead.
package memlimit

import (
	"bytes"
	"os"
	"runtime/debug"
	"strconv"
)

// Ratio is the share of the container's limit the Go runtime is held to:
// the rest is for what the runtime does not count and the container is
// charged for (the binary's mapped text, the kernel's buffers).
const Ratio = 0.9

// cgroupFiles hold the memory limit of this process's cgroup: v2 (the
// container's own with a cgroup namespace, as containerd and CRI-O set
// it), then v1.
var cgroupFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// Cgroup is the memory limit of the cgroup this process runs in, in bytes,
// read through read; ok is false where none is set ("max", v1's page
// counter maximum) or none can be read.
func Cgroup(read func(string) ([]byte, error)) (limit int64, ok bool) {
	for _, f := range cgroupFiles {
		b, err := read(f)
		if err != nil {
			continue
		}
		s := string(bytes.TrimSpace(b))
		if s == "max" {
			return 0, false
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 || n >= 1<<62 { // v1 says "none" with a number near 2^63
			return 0, false
		}
		return n, true
	}
	return 0, false
}

// FromContainer sets the soft limit to Ratio of the container's memory
// limit, unless GOMEMLIMIT is set (it wins) or the container has no limit.
// It returns the limit set and the container's (0, 0: nothing set).
func FromContainer() (soft, container int64) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return 0, 0
	}
	container, ok := Cgroup(os.ReadFile)
	if !ok {
		return 0, 0
	}
	soft = int64(float64(container) * Ratio)
	debug.SetMemoryLimit(soft)
	return soft, container
}
