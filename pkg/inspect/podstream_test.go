package inspect

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
)

// podList is a list of n pods with a continue token, with the fields the
// core reads and a large managedFields entry (what trimPod drops).
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
}
