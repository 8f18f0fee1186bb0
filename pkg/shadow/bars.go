package shadow

import (
	"fmt"
	"io"
	"strings"
)

// barWidth is the longest bar, in cells.
const barWidth = 30

// bar is n's bar against top: at least one cell for any n above 0, so
// that a small count is never drawn as none.
func bar(n, top int) string {
	if n <= 0 || top <= 0 {
		return ""
	}
	cells := n * barWidth / top
	if cells == 0 {
		cells = 1
	}
	return strings.Repeat("█", cells)
}

// printBars draws the pods each side restarted, and the changes by class
// (in classOrder: what a team weighs first), as bars on one scale per
// block: the difference reads at a glance in a change review.
func (r Report) printBars(w io.Writer) {
	s := r.Summary
	top := max(s.PeerPods, s.CmsyncPods)
	fmt.Fprintln(w, "Pods restarted:")
	fmt.Fprintf(w, "  %-15s %6d %s\n", "peer", s.PeerPods, bar(s.PeerPods, top))
	fmt.Fprintf(w, "  %-15s %6d %s\n", "cmsync", s.CmsyncPods, bar(s.CmsyncPods, top))
	counts := map[Class]int{}
	top = 0
	for _, row := range r.Items {
		counts[row.Class]++
		top = max(top, counts[row.Class])
	}
	fmt.Fprintln(w, "Changes by class:")
	for _, c := range classOrder {
		if counts[c] > 0 {
			fmt.Fprintf(w, "  %-15s %6d %s\n", c, counts[c], bar(counts[c], top))
		}
	}
}
