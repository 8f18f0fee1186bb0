package inspect

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread"
)

func TestSyncedAt(t *testing.T) {
	got, ok := containerread.SyncedAt("..2024_05_06_07_08_09.123456789")
	if !ok || !got.Equal(time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)) {
		t.Errorf("got %v %v", got, ok)
	}
	for _, bad := range []string{"..data", "2024_05_06_07_08_09.1", "..2024_05_06_07_08_09", "..2024_05_06_07_08_09.", "..2024_13_06_07_08_09.1", "..2024_05_06_07_08_09.1x"} {
		if _, ok := containerread.SyncedAt(bad); ok {
			t.Errorf("SyncedAt(%q) ok", bad)
		}
	}
}

// TestEstimateDelay: the delay of a hot-updating use from what is known of
// the node: nothing, its TTL annotation, or its kubelet configuration.
func TestEstimateDelay(t *testing.T) {
	node := func(ttl string) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}
		if ttl != "" {
			n.Annotations = map[string]string{NodeTTLAnnotation: ttl}
		}
		return n
	}
	cases := []struct {
		name  string
		node  *corev1.Node
		kc    *KubeletTiming
		want  string
		basis DelayBasis
	}{
		{"nodes not readable", nil, nil, "0-90s", BasisDefault},
		{"node without TTL annotation", node(""), nil, "0-90s", BasisDefault},
		{"node with a bad TTL annotation", node("soon"), nil, "0-90s", BasisDefault},
		{"node TTL 0", node("0"), nil, "0-90s", BasisNodeTTL},
		{"node TTL 300s", node("300"), nil, "0-390s", BasisNodeTTL},
		{"kubelet Watch, default sync", node("300"), &KubeletTiming{Strategy: StrategyWatch}, "0-90s", BasisKubeletConfig},
		{"kubelet Get, sync 10s", node("300"), &KubeletTiming{SyncFrequency: 10 * time.Second, Strategy: StrategyGet}, "0-15s", BasisKubeletConfig},
		{"kubelet Cache, sync 2m, node TTL 30s", node("30"), &KubeletTiming{SyncFrequency: 2 * time.Minute, Strategy: StrategyCache}, "0-210s", BasisKubeletConfig},
		{"kubelet Cache, node without TTL: 1m", node(""), &KubeletTiming{SyncFrequency: time.Minute, Strategy: StrategyCache}, "0-150s", BasisKubeletConfig},
		{"kubelet Cache, nodes not readable: 1m", nil, &KubeletTiming{Strategy: StrategyCache}, "0-150s", BasisKubeletConfig},
		{"kubelet sync 1.5s", nil, &KubeletTiming{SyncFrequency: 1500 * time.Millisecond, Strategy: StrategyWatch}, "0-2.25s", BasisKubeletConfig},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			snap := &Snapshot{}
			if tc.node != nil {
				snap.Nodes = map[string]*corev1.Node{"n": tc.node}
			}
			if tc.kc != nil {
				snap.KubeletConfigs = map[string]KubeletTiming{"n": *tc.kc}
			}
			d := EstimateDelay("n", snap)
			if got := FormatDelay(&d); got != tc.want || d.Basis != tc.basis || d.Min.Duration != 0 {
				t.Errorf("EstimateDelay = %s %s (min %v), want %s %s", got, d.Basis, d.Min, tc.want, tc.basis)
			}
		})
	}
	if FormatDelay(nil) != "" {
		t.Errorf("FormatDelay(nil) = %q, want empty", FormatDelay(nil))
	}
}
