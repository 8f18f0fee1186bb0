package memlimit

import (
	"errors"
	"io/fs"
	"testing"
)

func TestCgroup(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		limit int64
		ok    bool
	}{
		{"v2, a limit", map[string]string{"/sys/fs/cgroup/memory.max": "536870912\n"}, 512 << 20, true},
		{"v2, none", map[string]string{"/sys/fs/cgroup/memory.max": "max\n"}, 0, false},
		{"v1, a limit", map[string]string{"/sys/fs/cgroup/memory/memory.limit_in_bytes": "268435456\n"}, 256 << 20, true},
		{"v1, none (the page counter's maximum)", map[string]string{"/sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n"}, 0, false},
		{"v2 is read before v1", map[string]string{"/sys/fs/cgroup/memory.max": "1048576", "/sys/fs/cgroup/memory/memory.limit_in_bytes": "2097152"}, 1 << 20, true},
		{"no cgroup files", map[string]string{}, 0, false},
		{"unreadable content", map[string]string{"/sys/fs/cgroup/memory.max": "lots"}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			read := func(p string) ([]byte, error) {
				if s, ok := tc.files[p]; ok {
					return []byte(s), nil
				}
				return nil, &fs.PathError{Op: "open", Path: p, Err: errors.New("no such file")}
			}
			limit, ok := Cgroup(read)
			if limit != tc.limit || ok != tc.ok {
				t.Errorf("Cgroup = %d, %t; want %d, %t", limit, ok, tc.limit, tc.ok)
			}
		})
	}
}

// GOMEMLIMIT wins over the container's limit: nothing is set.
func TestFromContainerLeavesGOMEMLIMIT(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "100MiB")
	if soft, container := FromContainer(); soft != 0 || container != 0 {
		t.Errorf("FromContainer with GOMEMLIMIT set = %d, %d; want 0, 0", soft, container)
	}
}
