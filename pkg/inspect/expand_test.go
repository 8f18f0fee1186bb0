package inspect

import "testing"

func TestExpandSubPathExpr(t *testing.T) {
	env := map[string]string{"A": "x", "EMPTY": ""}
	for in, want := range map[string]string{"$(A)/y": "x/y", "$$(A)": "$(A)", "a$b": "a$b", "$(A": "$(A", "end$": "end$"} {
		got, err := ExpandSubPathExpr(in, env)
		if err != nil || got != want {
			t.Errorf("%q -> %q %v, want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"$(B)", "$(EMPTY)"} {
		if _, err := ExpandSubPathExpr(bad, env); err == nil {
			t.Errorf("%q expanded", bad)
		}
	}
}
