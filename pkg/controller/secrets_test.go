package controller

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/reconcile"
)

// secretCalls runs the controller over one namespace until its loop is
// ready, with the loop's Secrets as given, and returns every call it made
// on Secrets: "VERB NAMESPACE/NAME" ("" name for a list or a watch).
func secretCalls(t *testing.T, secrets bool) []string {
	t.Helper()
	c := fake.NewClientset(
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "shop"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "sys"}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ready atomic.Bool
	ctl := &Controller{
		Config: Config{Namespace: "sys", KeySecret: "key", MetricsAddr: "127.0.0.1:0"},
		Client: c,
		NewLoop: func(k []byte) *reconcile.Loop {
			return &reconcile.Loop{Config: reconcile.Config{Namespace: "shop", Secrets: secrets, Debounce: time.Second, MaxWait: time.Second}, Client: c}
		},
		Log: func(e reconcile.Event) {
			if e.Kind == reconcile.EventReady {
				ready.Store(true)
			}
		},
		Metrics: NewMetrics(),
	}
	done := make(chan error, 1)
	go func() { done <- ctl.Run(ctx) }()
	for deadline := time.Now().Add(10 * time.Second); !ready.Load(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the loop is not ready after 10 s")
		}
	}
	// the watermark is written once the loop acted: the write it makes
	w := &watermarkWriter{client: c, namespace: "sys", name: "key", clock: time.Now}
	w.acted(ctx, time.Now())
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var calls []string
	for _, a := range c.Actions() {
		if a.GetResource().Resource != "secrets" {
			continue
		}
		var name string
		switch a := a.(type) {
		case k8stesting.GetAction:
			name = a.GetName()
		case k8stesting.PatchAction:
			name = a.GetName()
		case k8stesting.CreateAction:
			name = a.GetObject().(metav1.Object).GetName()
		}
		calls = append(calls, fmt.Sprintf("%s %s/%s", a.GetVerb(), a.GetNamespace(), name))
	}
	return calls
}

// Without --secrets the controller lists and watches no Secret, and reads
// none but its key: what the chart's secrets=false grants (get and patch
// of the key by name, create of it). With --secrets it does list them,
// which shows that the calls are seen.
func TestNoSecretsReadsOnlyTheKey(t *testing.T) {
	seen := map[string]bool{}
	for _, call := range secretCalls(t, false) {
		switch call {
		case "get sys/key", "create sys/key", "patch sys/key":
			seen[call] = true
		default:
			t.Errorf("without --secrets: %s", call)
		}
	}
	if len(seen) != 3 {
		t.Errorf("without --secrets: the key's calls %v, want its get, create and patch", seen)
	}
	var listed bool
	for _, call := range secretCalls(t, true) {
		listed = listed || call == "list shop/"
	}
	if !listed {
		t.Error("with --secrets: no list of the Secrets of shop seen")
	}
}
