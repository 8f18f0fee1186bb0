package reconcile

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

// TestTrimmedListPages: the informers' list asks for listPage objects at a
// time (the reflector's resourceVersion 0 as a consistent read, which the
// API server pages), trims each page's values before it asks for the next,
// and returns one list at the first page's resourceVersion.
func TestTrimmedListPages(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	var asked []metav1.ListOptions
	var prev *corev1.ConfigMapList
	pages := 3
	list := func(_ context.Context, o metav1.ListOptions) (runtime.Object, error) {
		asked = append(asked, o)
		n := len(asked)
		if prev != nil && len(prev.Items[0].Data["v"]) != 32 {
			return nil, fmt.Errorf("page %d asked for before page %d was trimmed", n, n-1)
		}
		page := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: fmt.Sprint(100 + n)},
			Items: []corev1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("cm-", n)}, Data: map[string]string{"v": big}}}}
		if n < pages {
			page.Continue = fmt.Sprint("after-", n)
		}
		prev = page
		return page, nil
	}
	got, err := trimmedList(context.Background(), metav1.ListOptions{ResourceVersion: "0", LabelSelector: "a=b"}, list)
	if err != nil {
		t.Fatal(err)
	}
	if len(asked) != pages {
		t.Fatalf("%d requests, want %d", len(asked), pages)
	}
	for i, o := range asked {
		want := metav1.ListOptions{Limit: listPage, LabelSelector: "a=b"}
		if i > 0 {
			want.Continue = fmt.Sprint("after-", i)
		}
		if o != want {
			t.Errorf("request %d: %+v, want %+v", i+1, o, want)
		}
	}
	l := got.(*corev1.ConfigMapList)
	if l.ResourceVersion != "101" || l.Continue != "" || len(l.Items) != pages {
		t.Fatalf("list at %q (continue %q) of %d items, want 101, none, %d", l.ResourceVersion, l.Continue, len(l.Items), pages)
	}
	for i, cm := range l.Items {
		if cm.Name != fmt.Sprint("cm-", i+1) || len(cm.Data["v"]) != 32 {
			t.Errorf("item %d: %s with a value of %d bytes, want cm-%d and its SHA-256", i, cm.Name, len(cm.Data["v"]), i+1)
		}
	}
}

// TestInformersKeepDigests: the informers' caches hold each ConfigMap and
// Secret value as its SHA-256, from the list and from a later watch event.
func TestInformersKeepDigests(t *testing.T) {
	big := strings.Repeat("y", 1<<20)
	client := fake.NewClientset(
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}, Data: map[string]string{"v": big}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}, Data: map[string][]byte{"v": []byte(big)}})
	l := &Loop{Config: Config{Secrets: true}, Client: client}
	factory := informers.NewSharedInformerFactory(client, 0)
	l.objectInformers(factory)
	cms, secrets := factory.Core().V1().ConfigMaps().Informer(), factory.Core().V1().Secrets().Informer()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), cms.HasSynced, secrets.HasSynced) {
		t.Fatal("not synced")
	}
	value := func() (int, int) {
		c, _, _ := cms.GetStore().GetByKey("ns/cm")
		s, _, _ := secrets.GetStore().GetByKey("ns/s")
		if c == nil || s == nil {
			return -1, -1
		}
		return len(c.(*corev1.ConfigMap).Data["v"]), len(s.(*corev1.Secret).Data["v"])
	}
	if c, s := value(); c != 32 || s != 32 {
		t.Fatalf("listed: values of %d and %d bytes cached, want their SHA-256", c, s)
	}
	edited := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}, Data: map[string]string{"v": big + "z", "w": big}}
	if _, err := client.CoreV1().ConfigMaps("ns").Update(ctx, edited, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, _, _ := cms.GetStore().GetByKey("ns/cm")
		if cm := c.(*corev1.ConfigMap); len(cm.Data) == 2 {
			if len(cm.Data["v"]) != 32 || len(cm.Data["w"]) != 32 {
				t.Fatalf("watched: values of %d and %d bytes cached, want their SHA-256", len(cm.Data["v"]), len(cm.Data["w"]))
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the edit did not reach the cache")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
