package nodereader

import "github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread"

// A wait verifies each pod on its own, as soon as its own patch is
// acknowledged: many small reads of one node at once. One read runs per
// node at a time; the reads asked for meanwhile wait and are merged into
// the next one (internal/coalesce). So a node is read by one exec at a
// time however many pods ask, and no reader runs its /proc scan twice at
// once.

// job is one caller's share of a node read: its containers and where
// their results go.
type job struct {
	nr  *nodeBatch
	out []*containerread.Verified
	// fallback marks, by request like out, the containers to read with
	// Options.Fallback (their node has no reader)
	fallback []bool
}

// merge is one node read of every job's containers, each path once.
func merge(jobs []*job) *nodeBatch {
	if len(jobs) == 1 {
		return jobs[0].nr
	}
	m := &nodeBatch{node: jobs[0].nr.node}
	seen := map[string]bool{}
	for _, j := range jobs {
		m.containers = append(m.containers, j.nr.containers...)
		for _, p := range j.nr.paths {
			if !seen[p] {
				seen[p] = true
				m.paths = append(m.paths, p)
			}
		}
	}
	return m
}
