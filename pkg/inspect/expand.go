package inspect

import (
	"fmt"
	"slices"
	"strings"
)

// ExpandSubPathExpr expands $(VAR) references as the kubelet does
// (third_party/forked/golang/expansion and ExpandContainerVolumeMounts):
// "$$" is a literal "$", an unknown or empty variable is an error. It is the
// one expander of this package: predict gives it the environment the pod
// spec and the snapshot tell (specEnv), compare the container's own.
func ExpandSubPathExpr(expr string, env map[string]string) (string, error) {
	var missing []string
	out := expand(expr, func(name string) (string, bool) {
		v := env[name]
		if v == "" {
			missing = append(missing, name)
		}
		return v, true
	})
	if len(missing) > 0 {
		slices.Sort(missing)
		return "", fmt.Errorf("missing value for %s", strings.Join(slices.Compact(missing), ", "))
	}
	return out, nil
}

// expandEnvValue expands the $(VAR) references of an env entry's value
// against the variables defined before it, as the kubelet does: an unknown
// reference stays as it is.
func expandEnvValue(v string, vars map[string]string) string {
	return expand(v, func(name string) (string, bool) {
		s, ok := vars[name]
		return s, ok
	})
}

// expand is the kubelet's expansion.Expand: mapping returns a variable's
// value, or false to keep the reference as written.
func expand(expr string, mapping func(string) (string, bool)) string {
	var b strings.Builder
	for i := 0; i < len(expr); i++ {
		c := expr[i]
		if c != '$' || i+1 >= len(expr) {
			b.WriteByte(c)
			continue
		}
		switch n := expr[i+1]; n {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(expr[i+2:], ')')
			if end < 0 {
				b.WriteString("$(")
				i++
				continue
			}
			name := expr[i+2 : i+2+end]
			if v, ok := mapping(name); ok {
				b.WriteString(v)
			} else {
				b.WriteString("$(" + name + ")")
			}
			i += 2 + end
		default:
			b.WriteByte('$')
			b.WriteByte(n)
			i++
		}
	}
	return b.String()
}
