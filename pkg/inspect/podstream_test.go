package inspect

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// podList is a list of n pods with a continue token, with the fields the
// core reads and a large managedFields entry (what TrimPod drops).
func podList(n int) *corev1.PodList {
	l := &corev1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"},
		ListMeta: metav1.ListMeta{ResourceVersion: "42", Continue: "next-page"}}
	for i := 0; i < n; i++ {
		l.Items = append(l.Items, corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%d", i), Namespace: "ns", UID: "uid",
				ManagedFields: []metav1.ManagedFieldsEntry{{Manager: strings.Repeat("m", 1000)}}},
			Spec: corev1.PodSpec{NodeName: "node", Containers: []corev1.Container{{Name: "c",
				VolumeMounts: []corev1.VolumeMount{{Name: "v", MountPath: "/etc/v"}},
				Env: []corev1.EnvVar{{Name: "K", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: fmt.Sprintf("cm-%d", i)}, Key: "k"}}}}}},
				Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}})
	}
	return l
}

// encodeProtobuf encodes obj as the API server does for
// application/vnd.kubernetes.protobuf.
func encodeProtobuf(t *testing.T, obj runtime.Object) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(obj, &b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestDecodePodList: the pods of a protobuf (or JSON) LIST response come
// one at a time, equal to the encoded ones, in order, with the list's
// continue token; a response cut short is an error, never a shorter list.
func TestDecodePodList(t *testing.T) {
	want := podList(300)
	pb := encodeProtobuf(t, want)
	js, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string][]byte{"protobuf": pb, "json": js} {
		t.Run(name, func(t *testing.T) {
			var got []corev1.Pod
			meta, err := decodePodList(bytes.NewReader(body), func(p *corev1.Pod) error {
				got = append(got, *p)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if meta.Continue != "next-page" || meta.ResourceVersion != "42" {
				t.Errorf("list metadata = %+v, want continue next-page, resourceVersion 42", meta)
			}
			if len(got) != len(want.Items) {
				t.Fatalf("%d pods, want %d", len(got), len(want.Items))
			}
			for i := range got {
				g, _ := json.Marshal(got[i])
				w, _ := json.Marshal(want.Items[i])
				if !bytes.Equal(g, w) {
					t.Fatalf("pod %d:\n got %s\nwant %s", i, g, w)
				}
			}
		})
	}
	// cut anywhere after the magic: an error, never a shorter list (a cut
	// after the list, in the envelope's empty trailing fields, loses nothing)
	small := encodeProtobuf(t, podList(3))
	for cut := len(protobufMagic) + 1; cut < len(small); cut++ {
		n := 0
		_, err := decodePodList(bytes.NewReader(small[:cut]), func(*corev1.Pod) error { n++; return nil })
		if err == nil && n != 3 {
			t.Fatalf("cut at %d of %d bytes: no error and %d pods of 3", cut, len(small), n)
		}
	}
	// a pod handler's error stops the list
	stop := fmt.Errorf("stop")
	if _, err := decodePodList(bytes.NewReader(pb), func(*corev1.Pod) error { return stop }); err != stop {
		t.Errorf("handler error: got %v, want %v", err, stop)
	}
	// a corrupt length is an error, not an allocation of that size: the
	// envelope's content encoding (field 3) claiming 1 TiB, and an item
	// claiming more than the list holds
	huge := binary.AppendUvarint(append(append([]byte{}, protobufMagic...), 3<<3|wireBytes), 1<<40)
	if _, err := decodePodList(bytes.NewReader(huge), func(*corev1.Pod) error { return nil }); err == nil ||
		!strings.Contains(err.Error(), "a content encoding of 1099511627776 bytes") {
		t.Errorf("content encoding of 1 TiB: got %v", err)
	}
	item := binary.AppendUvarint(append(append([]byte{}, protobufMagic...), unknownRawField<<3|wireBytes), 100)
	item = binary.AppendUvarint(append(item, listItemsField<<3|wireBytes), 1<<40)
	if _, err := decodePodList(bytes.NewReader(item), func(*corev1.Pod) error { return nil }); err == nil ||
		!strings.Contains(err.Error(), "an item of 1099511627776 bytes in a list of 100") {
		t.Errorf("item of 1 TiB: got %v", err)
	}
}

// TestStreamPods: against an HTTP server, streamPods asks for protobuf,
// follows the continue token (the first page from the watch cache, the
// next ones continuing it), hands every pod over in order, and a Forbidden
// answer stays a Forbidden error (the commands turn it into the RBAC rule).
func TestStreamPods(t *testing.T) {
	page1, page2 := podList(3), podList(2)
	page2.Continue = ""
	for i := range page2.Items {
		page2.Items[i].Name = fmt.Sprintf("q-%d", i)
	}
	var queries []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/namespaces/denied/pods" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,"message":"pods is forbidden"}`)
			return
		}
		if !strings.Contains(r.Header.Get("Accept"), "application/vnd.kubernetes.protobuf") {
			t.Errorf("Accept = %q, want protobuf", r.Header.Get("Accept"))
		}
		queries = append(queries, r.URL.Path+"?"+r.URL.Query().Encode())
		page := page1
		if r.URL.Query().Get("continue") != "" {
			page = page2
		}
		w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf")
		w.Write(encodeProtobuf(t, page))
	}))
	defer srv.Close()
	rc, err := rest.RESTClientFor(&rest.Config{Host: srv.URL, APIPath: "/api", ContentConfig: rest.ContentConfig{
		GroupVersion: &corev1.SchemeGroupVersion, NegotiatedSerializer: scheme.Codecs.WithoutConversion()}})
	if err != nil {
		t.Fatal(err)
	}
	lo := metav1.ListOptions{Limit: 500, ResourceVersion: "0", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, LabelSelector: "app=x"}
	var names []string
	if err := streamPods(context.Background(), rc, "ns", lo, func(p *corev1.Pod) error {
		names = append(names, p.Name)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(names, " "); got != "p-0 p-1 p-2 q-0 q-1" {
		t.Errorf("pods = %s, want p-0 p-1 p-2 q-0 q-1", got)
	}
	want := []string{
		"/api/v1/namespaces/ns/pods?labelSelector=app%3Dx&limit=500&resourceVersion=0&resourceVersionMatch=NotOlderThan",
		"/api/v1/namespaces/ns/pods?continue=next-page&labelSelector=app%3Dx&limit=500",
	}
	if strings.Join(queries, "\n") != strings.Join(want, "\n") {
		t.Errorf("requests:\n%s\nwant:\n%s", strings.Join(queries, "\n"), strings.Join(want, "\n"))
	}
	err = streamPods(context.Background(), rc, "denied", lo, func(*corev1.Pod) error { return nil })
	if !apierrors.IsForbidden(err) {
		t.Errorf("denied: got %v, want a Forbidden error", err)
	}
}
