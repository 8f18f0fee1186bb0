package inspect

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/fixtures"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
)

// statusFixtureObjects decodes every object of testdata/status/*.yaml.
func statusFixtureObjects(t *testing.T) []runtime.Object {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "status", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures in testdata/status: %v", err)
	}
	sort.Strings(files)
	var objs []runtime.Object
	for _, f := range files {
		objs = append(objs, decodeStatusObjects(t, f)...)
	}
	return objs
}

func decodeStatusObjects(t *testing.T, file string) []runtime.Object {
	return fixtures.Objects(t, file)
}

// statusSnapshot builds the Snapshot that Load would read from the fixture
// objects (all namespaces, Secrets and Nodes included).
func statusSnapshot(t *testing.T) *Snapshot {
	t.Helper()
	s := &Snapshot{ConfigMaps: map[ObjectKey]*corev1.ConfigMap{}, Secrets: map[ObjectKey]*corev1.Secret{},
		ReplicaSets: map[NamespacedName]*appsv1.ReplicaSet{}, Jobs: map[NamespacedName]*batchv1.Job{},
		Nodes: map[string]*corev1.Node{}, SecretsListed: true}
	for _, obj := range statusFixtureObjects(t) {
		switch o := obj.(type) {
		case *corev1.Pod:
			s.Pods = append(s.Pods, *o)
		case *corev1.ConfigMap:
			s.ConfigMaps[ObjectKey{KindConfigMap, o.Namespace, o.Name}] = o
		case *corev1.Secret:
			s.Secrets[ObjectKey{KindSecret, o.Namespace, o.Name}] = o
		case *appsv1.ReplicaSet:
			s.ReplicaSets[NamespacedName{o.Namespace, o.Name}] = o
		case *batchv1.Job:
			s.Jobs[NamespacedName{o.Namespace, o.Name}] = o
		case *corev1.Node:
			s.Nodes[o.Name] = o
		default:
			t.Fatalf("unexpected fixture object %T", obj)
		}
	}
	return s
}

// statusPod returns the fixture pod ns/name.
func statusPod(t *testing.T, snap *Snapshot, ns, name string) *corev1.Pod {
	t.Helper()
	for i := range snap.Pods {
		if snap.Pods[i].Namespace == ns && snap.Pods[i].Name == name {
			return &snap.Pods[i]
		}
	}
	t.Fatalf("no fixture pod %s/%s", ns, name)
	return nil
}

func TestConfigMapObject(t *testing.T) {
	snap := statusSnapshot(t)
	o := snap.Object(ObjectKey{KindConfigMap, "shop", "app-config"})
	if !o.Exists || o.Immutable || o.Kind != KindConfigMap || o.Namespace != "shop" || o.Name != "app-config" {
		t.Fatalf("object = %+v", o)
	}
	if got, want := o.Keys(), []string{"app.yaml", "log-level", "logo.png"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Keys() = %q, want %q", got, want)
	}
	if string(o.Data["log-level"]) != "info" || !bytes.Equal(o.Data["logo.png"], []byte{0x89, 'P', 'N', 'G', '\r', '\n'}) {
		t.Errorf("Data = %q", o.Data)
	}
	if !o.BinaryKeys["logo.png"] || o.BinaryKeys["log-level"] {
		t.Errorf("BinaryKeys = %v, want only logo.png", o.BinaryKeys)
	}
	// The newest managedFields time, not the creation time.
	if want := time.Date(2024, 5, 6, 7, 0, 0, 0, time.UTC); !o.LastChange.Equal(want) {
		t.Errorf("LastChange = %v, want %v", o.LastChange, want)
	}
	if o.ResourceVersion != "101" || o.UID != "00000000-0000-0000-0000-000000000101" {
		t.Errorf("ResourceVersion, UID = %q, %q", o.ResourceVersion, o.UID)
	}

	// Without managedFields the creation time; immutable.
	f := snap.Object(ObjectKey{KindConfigMap, "shop", "frozen"})
	if !f.Immutable || !f.LastChange.Equal(time.Date(2024, 5, 3, 10, 0, 0, 0, time.UTC)) {
		t.Errorf("frozen = immutable %v, last change %v", f.Immutable, f.LastChange)
	}
}

func TestSecretObject(t *testing.T) {
	snap := statusSnapshot(t)
	o := snap.Object(ObjectKey{KindSecret, "shop", "db-creds"})
	if !o.Exists || o.Kind != KindSecret || len(o.BinaryKeys) != 0 {
		t.Fatalf("object = %+v", o)
	}
	if got, want := o.Keys(), []string{"password", "user"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Keys() = %q, want %q", got, want)
	}
}

func TestSnapshotObjectMissing(t *testing.T) {
	snap := statusSnapshot(t)
	for _, k := range []ObjectKey{
		{KindConfigMap, "shop", "ghost-config"},
		{KindConfigMap, "nowhere", "app-config"},
		{KindSecret, "shop", "app-config"}, // a ConfigMap's name is not a Secret
		{"Deployment", "shop", "app-config"},
	} {
		o := snap.Object(k)
		if o.Exists || o.Kind != k.Kind || o.Namespace != k.Namespace || o.Name != k.Name || len(o.Keys()) != 0 {
			t.Errorf("Object(%v) = %+v, want a missing object", k, o)
		}
	}
}

// TestLoadFake checks what Load keeps from a fake clientset: the namespace,
// the selector, Secrets only when asked, owners only when a pod needs them,
// and nodes that are optional.
func TestLoadFake(t *testing.T) {
	objs := statusFixtureObjects(t)
	cases := []struct {
		name        string
		opts        LoadOptions
		nodesDenied bool
		pods        int
		configMaps  int
		secrets     int
		rs, jobs    int
		nodes       int // -1: nil
	}{
		{name: "namespace shop", opts: LoadOptions{Namespace: "shop", Nodes: true},
			pods: 16, configMaps: 6, secrets: 0, rs: 0, jobs: 0, nodes: 4},
		{name: "namespace shop with secrets", opts: LoadOptions{Namespace: "shop", Secrets: true},
			pods: 16, configMaps: 6, secrets: 2, nodes: -1},
		{name: "owners: replicasets and jobs listed", opts: LoadOptions{Namespace: "owners"},
			pods: 12, configMaps: 1, rs: 3, jobs: 2, nodes: -1},
		{name: "all namespaces", opts: LoadOptions{Nodes: true},
			pods: 28, configMaps: 8, rs: 3, jobs: 2, nodes: 4},
		{name: "nodes forbidden: defaults apply", opts: LoadOptions{Namespace: "shop", Nodes: true}, nodesDenied: true,
			pods: 16, configMaps: 6, nodes: -1},
		{name: "pod selector", opts: LoadOptions{Namespace: "shop", PodSelector: "variant=app.yaml"},
			pods: 1, configMaps: 6, nodes: -1},
		{name: "no pods: nodes not read", opts: LoadOptions{Namespace: "empty", Nodes: true},
			pods: 0, configMaps: 0, nodes: -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientset(objs...)
			if tc.nodesDenied {
				c.PrependReactor("list", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "", errors.New("no RBAC"))
				})
			}
			s, err := Load(context.Background(), c, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			got := []int{len(s.Pods), len(s.ConfigMaps), len(s.Secrets), len(s.ReplicaSets), len(s.Jobs), len(s.Nodes)}
			if s.Nodes == nil {
				got[5] = -1
			}
			want := []int{tc.pods, tc.configMaps, tc.secrets, tc.rs, tc.jobs, tc.nodes}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("pods, configmaps, secrets, replicasets, jobs, nodes = %v, want %v", got, want)
			}
			if s.SecretsListed != tc.opts.Secrets {
				t.Errorf("SecretsListed = %v, want %v", s.SecretsListed, tc.opts.Secrets)
			}
			for _, a := range c.Actions() {
				if a.GetVerb() != "list" {
					t.Errorf("unexpected %s %s: Load only lists", a.GetVerb(), a.GetResource().Resource)
				}
				if a.GetResource().Resource == "secrets" && !tc.opts.Secrets {
					t.Errorf("secrets listed without LoadOptions.Secrets")
				}
			}
		})
	}
}

func TestLoadListError(t *testing.T) {
	c := fake.NewClientset()
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", errors.New("no RBAC"))
	c.PrependReactor("list", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, forbidden
	})
	_, err := Load(context.Background(), c, LoadOptions{Namespace: "shop"})
	var le *ListError
	if !errors.As(err, &le) || le.Resource != "configmaps" || le.Namespace != "shop" {
		t.Fatalf("err = %#v, want a *ListError for configmaps in shop", err)
	}
	if !apierrors.IsForbidden(err) {
		t.Errorf("the ListError does not unwrap to the Forbidden answer: %v", err)
	}
	if got, want := err.Error(), "listing configmaps: "+forbidden.Error(); got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

// pagingServer serves LISTs from fixture objects by path, honouring limit
// and continue (the fake clientset ignores both), and records the query of
// every request per path.
type pagingServer struct {
	t     *testing.T
	mu    sync.Mutex
	calls map[string][]url.Values
	lists map[string]pagedList
}

type pagedList struct {
	apiVersion, kind string
	items            []runtime.Object
}

// take returns the requests recorded so far and forgets them.
func (p *pagingServer) take() map[string][]url.Values {
	p.mu.Lock()
	defer p.mu.Unlock()
	calls := p.calls
	p.calls = map[string][]url.Values{}
	return calls
}

func (p *pagingServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.calls[r.URL.Path] = append(p.calls[r.URL.Path], r.URL.Query())
	p.mu.Unlock()
	l, ok := p.lists[r.URL.Path]
	if !ok || r.Method != http.MethodGet {
		http.NotFound(w, r)
		return
	}
	q := r.URL.Query()
	start := 0
	if c := q.Get("continue"); c != "" {
		n, err := strconv.Atoi(c)
		if err != nil || n > len(l.items) {
			http.Error(w, "bad continue token", http.StatusBadRequest)
			return
		}
		start = n
	}
	end := len(l.items)
	if n, _ := strconv.Atoi(q.Get("limit")); n > 0 && start+n < end {
		end = start + n
	}
	meta := metav1.ListMeta{ResourceVersion: "500"}
	if end < len(l.items) {
		meta.Continue = strconv.Itoa(end)
	}
	w.Header().Set("Content-Type", "application/json")
	doc := map[string]any{"apiVersion": l.apiVersion, "kind": l.kind, "metadata": meta, "items": l.items[start:end]}
	if err := json.NewEncoder(w).Encode(doc); err != nil {
		p.t.Errorf("encode: %v", err)
	}
}

// TestLoadPaginates runs Load against an API server that pages (page size
// 2): every page of every kind is read, through one paginated LIST per kind
// (the first request without a continue token, each next one with the
// token of the previous page), and no pod is fetched on its own.
func TestLoadPaginates(t *testing.T) {
	ps := &pagingServer{t: t, lists: map[string]pagedList{}}
	add := func(path, apiVersion, kind string, obj runtime.Object) {
		l := ps.lists[path]
		l.apiVersion, l.kind = apiVersion, kind
		l.items = append(l.items, obj)
		ps.lists[path] = l
	}
	for _, obj := range statusFixtureObjects(t) {
		switch o := obj.(type) {
		case *corev1.Pod:
			if metav1.GetControllerOf(o) != nil && metav1.GetControllerOf(o).Kind == "Job" {
				continue // this server serves no Jobs
			}
			add("/api/v1/namespaces/"+o.Namespace+"/pods", "v1", "PodList", o)
		case *corev1.ConfigMap:
			add("/api/v1/namespaces/"+o.Namespace+"/configmaps", "v1", "ConfigMapList", o)
		case *appsv1.ReplicaSet:
			add("/apis/apps/v1/namespaces/"+o.Namespace+"/replicasets", "apps/v1", "ReplicaSetList", o)
		case *corev1.Node:
			add("/api/v1/nodes", "v1", "NodeList", o)
		}
	}
	srv := httptest.NewServer(ps)
	defer srv.Close()
	c, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, QPS: 1000, Burst: 1000})
	if err != nil {
		t.Fatal(err)
	}
	pages := func(path string) int { return (len(ps.lists[path].items) + 1) / 2 }

	for _, ns := range []string{"shop", "owners"} {
		t.Run(ns, func(t *testing.T) {
			ps.take()
			s, err := Load(context.Background(), c, LoadOptions{Namespace: ns, Nodes: true, PageSize: 2})
			if err != nil {
				t.Fatal(err)
			}
			podsPath := "/api/v1/namespaces/" + ns + "/pods"
			cmPath := "/api/v1/namespaces/" + ns + "/configmaps"
			if pages(podsPath) < 2 {
				t.Fatalf("the fixture must span at least two pages of pods")
			}
			var names []string
			for _, p := range s.Pods {
				names = append(names, p.Name)
			}
			var wantNames []string
			for _, o := range ps.lists[podsPath].items {
				wantNames = append(wantNames, o.(*corev1.Pod).Name)
			}
			if !reflect.DeepEqual(names, wantNames) {
				t.Errorf("pods read = %q, want every page in order: %q", names, wantNames)
			}
			if len(s.ConfigMaps) != len(ps.lists[cmPath].items) || len(s.Nodes) != 4 {
				t.Errorf("read %d configmaps and %d nodes, want %d and 4", len(s.ConfigMaps), len(s.Nodes), len(ps.lists[cmPath].items))
			}
			want := map[string]int{podsPath: pages(podsPath), cmPath: pages(cmPath), "/api/v1/nodes": pages("/api/v1/nodes")}
			if ns == "owners" {
				rsPath := "/apis/apps/v1/namespaces/owners/replicasets"
				want[rsPath] = pages(rsPath)
				if len(s.ReplicaSets) != 3 {
					t.Errorf("read %d replicasets, want 3", len(s.ReplicaSets))
				}
			}
			got := map[string]int{}
			for path, queries := range ps.take() {
				got[path] = len(queries)
				for i, q := range queries {
					if q.Get("limit") != "2" {
						t.Errorf("%s request %d: limit=%q, want 2", path, i, q.Get("limit"))
					}
					if first, cont := i == 0, q.Get("continue"); first != (cont == "") {
						t.Errorf("%s request %d: continue=%q", path, i, cont)
					}
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("requests per path = %v, want %v", got, want)
			}
		})
	}
}

// TestLoadOptionalKindsDenied: RBAC that denies the optional kinds
// (Secrets, ReplicaSets, Jobs, workloads, nodes) is no error: the kinds are
// recorded in Denied, Secrets are left unread, pods and ConfigMaps load.
func TestLoadOptionalKindsDenied(t *testing.T) {
	c := fake.NewClientset(statusFixtureObjects(t)...)
	denied := []string{"secrets", "replicasets", "jobs", "deployments", "statefulsets", "daemonsets", "cronjobs", "nodes"}
	for _, r := range denied {
		c.PrependReactor("list", r, func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: r}, "", errors.New("no RBAC"))
		})
	}
	s, err := Load(context.Background(), c, LoadOptions{Namespace: "owners", Secrets: true, Nodes: true, Workloads: true})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if len(s.Pods) == 0 || len(s.ConfigMaps) == 0 {
		t.Errorf("pods %d, configmaps %d: want both loaded", len(s.Pods), len(s.ConfigMaps))
	}
	if s.SecretsListed || len(s.Secrets) != 0 || s.Nodes != nil || len(s.ReplicaSets) != 0 {
		t.Errorf("SecretsListed %v, %d secrets, nodes %v, %d replicasets: want nothing of the denied kinds", s.SecretsListed, len(s.Secrets), s.Nodes, len(s.ReplicaSets))
	}
	var got []string
	for _, le := range s.Denied {
		got = append(got, le.Resource)
		if !apierrors.IsForbidden(le) {
			t.Errorf("Denied %s is not the Forbidden answer: %v", le.Resource, le)
		}
	}
	sort.Strings(got)
	want := append([]string(nil), denied...)
	sort.Strings(want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Denied = %v, want %v", got, want)
	}
	// a Forbidden answer for a required kind is still an error
	c2 := fake.NewClientset()
	c2.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no RBAC"))
	})
	if _, err := Load(context.Background(), c2, LoadOptions{Namespace: "owners"}); !apierrors.IsForbidden(err) {
		t.Errorf("pods forbidden: err = %v, want the Forbidden error", err)
	}
}

// With a PodSink, Load gives each pod to the sink once the kinds its uses
// are predicted from have been listed, and keeps none: a Builder fed that
// way makes the report Build makes of the pods kept in the snapshot, and
// its Redactor the same redactions. Every other LIST is slowed down here, so
// that a pod given to the sink before its ConfigMaps, Secrets, nodes or
// owners were in would show (a missing object, a ReplicaSet as workload).
func TestLoadPodSinkBuildsTheSameReport(t *testing.T) {
	objs := statusFixtureObjects(t)
	for _, tc := range []struct {
		name string
		lo   LoadOptions
		bo   BuildOptions
	}{
		{"all namespaces", LoadOptions{Secrets: true, Nodes: true}, BuildOptions{Secrets: true}},
		{"owners", LoadOptions{Namespace: "owners", Nodes: true}, BuildOptions{}},
		{"unused, templates", LoadOptions{Namespace: "shop", Secrets: true, Nodes: true, Workloads: true}, BuildOptions{Secrets: true, Unused: true}},
		{"no pods", LoadOptions{Namespace: "empty", Nodes: true}, BuildOptions{Unused: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap, err := Load(context.Background(), fake.NewClientset(objs...), tc.lo)
			if err != nil {
				t.Fatal(err)
			}
			want, err := Build(snap, tc.bo)
			if err != nil {
				t.Fatal(err)
			}

			c := fake.NewClientset(objs...)
			for _, r := range []string{"configmaps", "secrets", "nodes", "replicasets", "jobs"} {
				c.PrependReactor("list", r, func(k8stesting.Action) (bool, runtime.Object, error) {
					time.Sleep(100 * time.Millisecond)
					return false, nil, nil
				})
			}
			var b *Builder
			calls, pods := 0, 0
			lo := tc.lo
			lo.PodSink = func(s *Snapshot) func(*corev1.Pod) error {
				calls++
				b = NewBuilder(s, tc.bo)
				return func(p *corev1.Pod) error {
					pods++
					b.Add(p)
					return nil
				}
			}
			sunk, err := Load(context.Background(), c, lo)
			if err != nil {
				t.Fatal(err)
			}
			if calls != 1 || len(sunk.Pods) != 0 || pods != len(snap.Pods) {
				t.Fatalf("PodSink called %d times, %d pods kept, %d given to it; want 1, 0, %d", calls, len(sunk.Pods), pods, len(snap.Pods))
			}
			if (sunk.Nodes == nil) != (snap.Nodes == nil) {
				t.Errorf("nodes kept: %v, want %v", sunk.Nodes != nil, snap.Nodes != nil)
			}
			got, err := b.Items()
			if err != nil {
				t.Fatal(err)
			}
			if len(got) == 0 && tc.name != "no pods" {
				t.Fatal("no items")
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("the sink's report differs from Build's:\n got %+v\nwant %+v", got, want)
			}
			// the values are sorted by length only: compare them as sets
			r, w := slices.Sorted(slices.Values(b.Redactor().values)), slices.Sorted(slices.Values(NewRedactor(snap).values))
			if !reflect.DeepEqual(r, w) {
				t.Errorf("redacted values %q, want %q", r, w)
			}
		})
	}
}

// A ConfigMap LIST that fails stops the pods at the sink's door: Load
// answers with the ConfigMaps' error (not the pods'), and the sink never
// sees a pod predicted against half the ConfigMaps.
func TestLoadPodSinkNotCalledWhenConfigMapsFail(t *testing.T) {
	c := fake.NewClientset(statusFixtureObjects(t)...)
	c.PrependReactor("list", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		time.Sleep(50 * time.Millisecond)
		return true, nil, apierrors.NewInternalError(errors.New("etcd is down"))
	})
	calls := 0
	_, err := Load(context.Background(), c, LoadOptions{Nodes: true, PodSink: func(*Snapshot) func(*corev1.Pod) error {
		calls++
		return func(*corev1.Pod) error { return nil }
	}})
	var le *ListError
	if !errors.As(err, &le) || le.Resource != "configmaps" {
		t.Fatalf("Load() = %v, want the configmaps LIST's error", err)
	}
	if calls != 0 {
		t.Errorf("PodSink called %d times after the ConfigMap LIST failed", calls)
	}
}

// TestSnapshotObjectCached: Object converts each object once and shares
// the result, safely across goroutines; a Secret not listed is unread.
func TestSnapshotObjectCached(t *testing.T) {
	snap := secretSnapshot(false)
	k := ObjectKey{KindConfigMap, "ns", "cm"}
	var wg sync.WaitGroup
	objs := make([]Object, 8)
	for i := range objs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			objs[i] = snap.Object(k)
		}()
	}
	wg.Wait()
	for _, o := range objs[1:] {
		if fmt.Sprintf("%p", o.Data) != fmt.Sprintf("%p", objs[0].Data) {
			t.Fatal("Object converted the ConfigMap more than once")
		}
	}
	if s := snap.Object(ObjectKey{KindSecret, "ns", "creds"}); !s.Unread || s.Exists {
		t.Errorf("secret not listed: %+v", s)
	}
	if s := secretSnapshot(true).Object(ObjectKey{KindSecret, "ns", "nope"}); s.Unread || s.Exists {
		t.Errorf("secret listed, absent: %+v", s)
	}
}

// OnlyUsed keeps the objects a pod uses and those Also names, drops the
// rest, and the report of the pods is the one the whole snapshot gives.
func TestLoadOnlyUsedKeepsWhatThePodsUse(t *testing.T) {
	objs := statusFixtureObjects(t)
	dropped := 0
	for _, tc := range []struct {
		name string
		lo   LoadOptions
		bo   BuildOptions
	}{
		{"all namespaces", LoadOptions{Secrets: true}, BuildOptions{Secrets: true}},
		{"shop", LoadOptions{Namespace: "shop", Secrets: true}, BuildOptions{Secrets: true}},
		{"owners", LoadOptions{Namespace: "owners"}, BuildOptions{}},
		{"pod selector", LoadOptions{Namespace: "shop", PodSelector: "variant=app.yaml"}, BuildOptions{}},
		{"no pods", LoadOptions{Namespace: "empty"}, BuildOptions{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			whole, err := Load(context.Background(), fake.NewClientset(objs...), tc.lo)
			if err != nil {
				t.Fatal(err)
			}
			want, err := Build(whole, tc.bo)
			if err != nil {
				t.Fatal(err)
			}
			used := usedObjects(whole.Pods, nil)
			var also []ObjectKey // one object no pod uses, if there is one
			for k := range whole.ConfigMaps {
				if !used[k] && also == nil {
					also = []ObjectKey{k}
				}
			}
			lo := tc.lo
			lo.OnlyUsed, lo.Also = true, also
			only, err := Load(context.Background(), fake.NewClientset(objs...), lo)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Build(only, tc.bo)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("the report differs from the whole snapshot's:\n got %+v\nwant %+v", got, want)
			}
			for k := range whole.ConfigMaps {
				if keep := used[k] || slices.Contains(also, k); keep != (only.ConfigMaps[k] != nil) {
					t.Errorf("%v kept: %v, want %v", k, only.ConfigMaps[k] != nil, keep)
				}
			}
			for k := range whole.Secrets {
				if only.Secrets[k] != nil != used[k] {
					t.Errorf("%v kept: %v, want %v", k, only.Secrets[k] != nil, used[k])
				}
			}
			if len(only.ConfigMaps) > len(whole.ConfigMaps) || len(only.Secrets) > len(whole.Secrets) {
				t.Errorf("kept more than listed")
			}
			dropped += len(whole.ConfigMaps) + len(whole.Secrets) - len(only.ConfigMaps) - len(only.Secrets)
		})
	}
	if dropped == 0 {
		t.Error("no case dropped an object: the fixture no longer tests OnlyUsed")
	}
	_, err := Load(context.Background(), fake.NewClientset(), LoadOptions{OnlyUsed: true, PodSink: func(*Snapshot) func(*corev1.Pod) error { return nil }})
	if err == nil {
		t.Error("OnlyUsed with a PodSink: no error")
	}
}
