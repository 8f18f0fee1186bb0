package controller

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/reconcile"
)

// Elected on a Lease of the fake clientset, the controller serves its
// probes and metrics, runs the loop with the key of its Secret, and
// releases the Lease when it stops.
func TestRunLeadsServesAndReleases(t *testing.T) {
	c := fake.NewClientset()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr := make(chan string, 1)
	var mu sync.Mutex
	var lines []string
	var key []byte
	ctl := &Controller{
		Config: Config{Namespace: "sys", LeaderElect: true, LeaseName: "cmsync", Identity: "pod-a", LeaseDuration: 3 * time.Second,
			RenewDeadline: 2 * time.Second, RetryPeriod: 200 * time.Millisecond, KeySecret: "key", MetricsAddr: "127.0.0.1:0"},
		Client: c,
		NewLoop: func(k []byte) *reconcile.Loop {
			key = k
			return &reconcile.Loop{Config: reconcile.Config{Namespace: "ns", Debounce: time.Second, MaxWait: time.Second}, Client: c}
		},
		Log: func(e reconcile.Event) {
			mu.Lock()
			defer mu.Unlock()
			lines = append(lines, string(e.Kind)+" "+e.Message)
		},
		Metrics: NewMetrics(),
		Ready:   func(a string) { addr <- a },
	}
	done := make(chan error, 1)
	go func() { done <- ctl.Run(ctx) }()
	base := "http://" + <-addr
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
		}
		l, _ := c.CoordinationV1().Leases("sys").Get(ctx, "cmsync", metav1.GetOptions{})
		if err == nil && resp.StatusCode == http.StatusOK && l != nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == "pod-a" && ctl.probes.synced.Load() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not leading and ready after 10 s: %v", lines)
		}
		time.Sleep(50 * time.Millisecond)
	}
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "cmsync_leader 1") {
		t.Errorf("/metrics while leading lacks cmsync_leader 1")
	}
	if s, err := c.CoreV1().Secrets("sys").Get(ctx, "key", metav1.GetOptions{}); err != nil || string(s.Data[KeyField]) != string(key) || len(key) != 32 {
		t.Errorf("the loop's key is not the Secret's (%v)", err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run after cancel: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	l, err := c.CoordinationV1().Leases("sys").Get(context.Background(), "cmsync", metav1.GetOptions{})
	if err != nil || (l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "") {
		t.Errorf("the Lease is not released: %v %v", err, l.Spec.HolderIdentity)
	}
	mu.Lock()
	defer mu.Unlock()
	got := strings.Join(lines, "\n")
	for _, want := range []string{"leader pod-a is a candidate for Lease sys/cmsync", "leader pod-a leads: acting on changes", "ready watching ConfigMaps in namespace ns", "leader pod-a stopped leading"} {
		if !strings.Contains(got, want) {
			t.Errorf("log lacks %q:\n%s", want, got)
		}
	}
}
