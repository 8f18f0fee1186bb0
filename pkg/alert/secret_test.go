package alert

import (
	"context"
	"encoding/base64"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread/readtest"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/reconcile"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

const oldValue, newValue = "sentinel-old-0xC0FFEE", "sentinel-new-0xBEEF00"

// TestRoundOfASecretCarriesNoValue runs the loop (on a fake clientset, its
// container read in memory) over an edit of a Secret a Deployment reads
// as an environment variable, and checks each format's message of the
// round: it names the Secret, its key and the restart, and holds neither
// the old nor the new value, plain or in base64.
func TestRoundOfASecretCarriesNoValue(t *testing.T) {
	client := fake.NewClientset(append(secretConsumer(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns"},
		Data: map[string][]byte{"PASSWORD": []byte(oldValue)}})...)
	ex := &readtest.Executor{Containers: map[string]*readtest.Container{"ns/web-1-a/app": {Env: map[string]string{"PASSWORD": oldValue}}}}
	vo := inspect.VerifyOptions{MaxBytes: 1 << 20, Concurrency: 1, ExecTimeout: 5 * time.Second}
	var mu sync.Mutex
	payloads := map[Format][]byte{}
	ready := make(chan struct{})
	l := &reconcile.Loop{
		Config: reconcile.Config{Namespace: "ns", Secrets: true, Debounce: 10 * time.Millisecond, MaxWait: 100 * time.Millisecond,
			Refresh: refresh.Config{Strategy: refresh.StrategyAuto, MaxRestarts: -1, Yes: true, Verify: vo}},
		Client: client, Cluster: refresh.ClientCluster(client, ex, vo, true, ""),
		Annotations: refresh.ClientWorkloads{Client: client}, Named: refresh.ClientWorkloads{Client: client},
		Emit: func(e reconcile.Event) {
			if e.Kind == reconcile.EventReady {
				close(ready)
			}
		},
	}
	l.Round = func(r reconcile.Round) {
		for _, f := range Formats {
			(&Alerter{Format: f, Info: "test", Send: func(b []byte) {
				mu.Lock()
				defer mu.Unlock()
				payloads[f] = b
			}}).Round(r)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	defer func() { cancel(); <-done }()
	<-ready
	_, err := client.CoreV1().Secrets("ns").Update(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns"},
		Data: map[string][]byte{"PASSWORD": []byte(newValue)}}, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(payloads)
		mu.Unlock()
		if n == len(Formats) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d messages after 10 s, want one per format", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	for f, b := range payloads {
		s := string(b)
		for _, want := range []string{"secret/db", "PASSWORD", "restart deployment/web"} {
			if !strings.Contains(s, want) && !(f == FormatRaw && want == "restart deployment/web") {
				t.Errorf("%s message lacks %q: %s", f, want, s)
			}
		}
		for _, v := range []string{oldValue, newValue, base64.StdEncoding.EncodeToString([]byte(oldValue)), base64.StdEncoding.EncodeToString([]byte(newValue))} {
			if strings.Contains(s, v) {
				t.Errorf("%s message holds a value of the Secret: %s", f, s)
			}
		}
	}
}

// secretConsumer is Deployment web (one replica, rolled out) with its
// ReplicaSet and running pod web-1-a, whose container app reads Secret
// db's PASSWORD as a variable.
func secretConsumer() []runtime.Object {
	ctrl, one := true, int32(1)
	sel := map[string]string{"app": "web"}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "web", Generation: 1},
		Spec:   appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: sel}},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "ns", UID: "web-rs", Labels: sel,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "web", Controller: &ctrl}}}}
	env := corev1.EnvVar{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "PASSWORD"}}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1-a", Namespace: "ns", UID: types.UID("u-web-1-a"), Labels: sel,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-1", UID: "web-rs", Controller: &ctrl}}},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "app", Env: []corev1.EnvVar{env}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}}
	return []runtime.Object{dep, rs, pod}
}
