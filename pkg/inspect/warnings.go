package inspect

import (
	"fmt"
	"strings"
)

// Warning is one cause that left several uses unverifiable, outside any
// one pod: the reader namespace missing, exec forbidden, a reader image
// the nodes cannot pull, a node that cannot be reached. It is said once,
// with its fix, and the rows point to it.
type Warning struct {
	// Cause is the first use's reason without its fix; Fix what fixes it.
	Cause, Fix string
	// Uses is how many uses it leaves unverifiable.
	Uses int
}

// String is the warning as kubectl prints one (after "Warning: "),
// numbered n.
func (w Warning) String(n int) string {
	return fmt.Sprintf("[%d] %d uses are unverifiable: %s. Fix: %s", n, w.Uses, strings.TrimSuffix(w.Cause, "."), w.Fix)
}

// warningMinUses is how many uses one cause must leave unverifiable to
// be said once as a warning rather than on each row.
const warningMinUses = 2

// GroupWarnings groups the unverifiable uses by their cause and its fix
// (a read that failed with a known fix: the same fix means the same
// cause, whatever the node or pod), and numbers each group of at least
// warningMinUses uses: each of its uses gets the number (Use.Warning).
// The warnings are in the order of their first use.
func GroupWarnings(items []Use) []Warning {
	type key struct {
		cause StateCause
		fix   string
	}
	count := map[key]int{}
	for _, it := range items {
		if it.State == StateUnverifiable && it.StateFix != "" {
			count[key{it.StateCause, it.StateFix}]++
		}
	}
	var out []Warning
	number := map[key]int{}
	for i := range items {
		it := &items[i]
		k := key{it.StateCause, it.StateFix}
		if it.State != StateUnverifiable || it.StateFix == "" || count[k] < warningMinUses {
			continue
		}
		n, ok := number[k]
		if !ok {
			cause, _, _ := strings.Cut(it.StateReason, " (") // the reason without its hint, which may name one pod
			out = append(out, Warning{Cause: cause, Fix: it.StateFix, Uses: count[k]})
			n = len(out)
			number[k] = n
		}
		it.Warning = n
	}
	return out
}
