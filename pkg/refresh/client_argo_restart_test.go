package refresh

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestRolloutRestartAtIsItsRestartTime: a Rollout restarted through
// spec.restartAt reads as restarted then, as a Deployment's template
// annotation does, so that its pause period holds after a leader change;
// the template's own later restart wins, and the object is not changed.
func TestRolloutRestartAtIsItsRestartTime(t *testing.T) {
	for _, tc := range []struct {
		name, restartAt, template, want string
	}{
		{"restartAt only", "2026-01-02T03:00:00Z", "", "2026-01-02T03:00:00Z"},
		{"restartAt later", "2026-01-02T03:00:00Z", "2026-01-02T02:00:00Z", "2026-01-02T03:00:00Z"},
		{"template later", "2026-01-02T03:00:00Z", "2026-01-02T04:00:00Z", "2026-01-02T04:00:00Z"},
		{"never restarted", "", "", ""},
	} {
		spec := map[string]any{"template": map[string]any{"metadata": map[string]any{}}}
		ann := map[string]any{"team": "a"}
		if tc.template != "" {
			ann[RestartedAtAnnotation] = tc.template
		}
		spec["template"].(map[string]any)["metadata"].(map[string]any)["annotations"] = ann
		if tc.restartAt != "" {
			spec["restartAt"] = tc.restartAt
		}
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
			"metadata": map[string]any{"name": "web", "namespace": "ns"}, "spec": spec}}
		r, err := rolloutOf(u)
		if err != nil {
			t.Fatal(err)
		}
		got := r.templateAnnotations()
		if got[RestartedAtAnnotation] != tc.want || got["team"] != "a" {
			t.Errorf("%s: template annotations %v, want %s=%q and the others", tc.name, got, RestartedAtAnnotation, tc.want)
		}
		if tc.template == "" && r.Spec.Template.Metadata.Annotations[RestartedAtAnnotation] != "" {
			t.Errorf("%s: the Rollout's own annotations were changed", tc.name)
		}
	}
}
