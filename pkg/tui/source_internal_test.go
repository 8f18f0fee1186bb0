package tui

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
)

// A snapshot marked synced has every object of the initial lists: the
// header says "live" only over complete data. (The sync state was taken
// after the caches were read, so a snapshot read while the ConfigMaps were
// still being listed could be marked synced and show their consumers
// "missing".)
func TestSyncedSnapshotIsComplete(t *testing.T) {
	const ns, configMaps = "shop", 300
	objs := []runtime.Object{&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns}}}
	for i := range configMaps {
		objs = append(objs, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%03d", i), Namespace: ns}})
	}
	for run := range 10 {
		s := NewFeed(fake.NewClientset(objs...), Scope{Namespace: ns}, nil)
		s.Start()
		deadline := time.Now().Add(20 * time.Second)
		for {
			msg := s.read()
			if msg.synced {
				if n := len(msg.snap.ConfigMaps); n != configMaps || len(msg.snap.Pods) != 1 {
					t.Fatalf("run %d: a snapshot marked synced has %d ConfigMaps and %d pods, want %d and 1", run, n, len(msg.snap.Pods), configMaps)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("run %d: not synced after 20s", run)
			}
		}
		s.Stop()
	}
}
