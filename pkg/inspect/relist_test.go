package inspect

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

const expiredStatus = `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Expired","code":410,` +
	`"message":"The provided continue parameter is too old to display a consistent list result."}`

// expiringServer answers the first page, then 410 Expired for its continue
// token (or for the first page too, with expireFirst), then the whole list
// (which meanwhile gained q-0) in one response.
func expiringServer(t *testing.T, expireFirst bool, queries *[]string) *httptest.Server {
	page := podList(3)
	for i := range page.Items {
		page.Items[i].UID = types.UID(page.Items[i].Name)
	}
	full := page.DeepCopy()
	full.Continue = ""
	full.Items = append(full.Items, *full.Items[0].DeepCopy())
	full.Items[3].Name, full.Items[3].UID = "q-0", "q-0"
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*queries = append(*queries, r.URL.Query().Encode())
		q := r.URL.Query()
		switch {
		case q.Get("continue") != "" || expireFirst:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusGone)
			fmt.Fprint(w, expiredStatus)
		case q.Get("limit") != "":
			w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf")
			w.Write(encodeProtobuf(t, page))
		default:
			w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf")
			w.Write(encodeProtobuf(t, full))
		}
	}))
}

func restClientFor(t *testing.T, url string) rest.Interface {
	rc, err := rest.RESTClientFor(&rest.Config{Host: url, APIPath: "/api", ContentConfig: rest.ContentConfig{
		GroupVersion: &corev1.SchemeGroupVersion, NegotiatedSerializer: scheme.Codecs.WithoutConversion()}})
	if err != nil {
		t.Fatal(err)
	}
	return rc
}

// TestStreamPodsListsAgainAfterAnExpiredPage: a continue token that expires
// part way does not abort the list: it is listed again in one request at
// the first request's resourceVersion, and each pod is handed on once.
func TestStreamPodsListsAgainAfterAnExpiredPage(t *testing.T) {
	var queries []string
	srv := expiringServer(t, false, &queries)
	defer srv.Close()
	lo := metav1.ListOptions{Limit: 3, ResourceVersion: "0", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}
	var names []string
	err := streamPods(context.Background(), restClientFor(t, srv.URL), "ns", lo, func(p *corev1.Pod) error {
		names = append(names, p.Name)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(names, " "); got != "p-0 p-1 p-2 q-0" {
		t.Errorf("pods handed on: %s, want p-0 p-1 p-2 q-0 (each once)", got)
	}
	want := []string{"limit=3&resourceVersion=0&resourceVersionMatch=NotOlderThan", "continue=next-page&limit=3",
		"resourceVersion=0&resourceVersionMatch=NotOlderThan"}
	if strings.Join(queries, "\n") != strings.Join(want, "\n") {
		t.Errorf("requests:\n%s\nwant:\n%s", strings.Join(queries, "\n"), strings.Join(want, "\n"))
	}
}

// TestStreamPodsExpiredFirstPageIsAnError: 410 on the first page is the
// server's answer to the request itself, not an expired token: no retry.
func TestStreamPodsExpiredFirstPageIsAnError(t *testing.T) {
	var queries []string
	srv := expiringServer(t, true, &queries)
	defer srv.Close()
	err := streamPods(context.Background(), restClientFor(t, srv.URL), "ns", metav1.ListOptions{Limit: 3}, func(*corev1.Pod) error { return nil })
	if !apierrors.IsResourceExpired(err) || len(queries) != 1 {
		t.Errorf("got %v after %d requests, want the Expired error after 1", err, len(queries))
	}
}

// TestEachListItemListsAgainAfterAnExpiredPage: the typed LISTs (ConfigMaps,
// Secrets, owners, nodes) get the same fallback as the streamed pod LIST.
func TestEachListItemListsAgainAfterAnExpiredPage(t *testing.T) {
	cm := func(name string) corev1.ConfigMap {
		return corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name)}}
	}
	var requests []metav1.ListOptions
	fn := func(_ context.Context, lo metav1.ListOptions) (runtime.Object, error) {
		requests = append(requests, lo)
		switch {
		case lo.Continue != "":
			return nil, apierrors.NewResourceExpired("too old")
		case lo.Limit > 0:
			return &corev1.ConfigMapList{ListMeta: metav1.ListMeta{Continue: "next"}, Items: []corev1.ConfigMap{cm("a"), cm("b")}}, nil
		}
		return &corev1.ConfigMapList{Items: []corev1.ConfigMap{cm("a"), cm("b"), cm("c")}}, nil
	}
	var names []string
	lo := metav1.ListOptions{Limit: 2, LabelSelector: "x=y"}
	err := eachListItem(context.Background(), lo, fn, func(obj runtime.Object) error {
		names = append(names, obj.(*corev1.ConfigMap).Name)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(names, " "); got != "a b c" {
		t.Errorf("objects handed on: %s, want a b c (each once)", got)
	}
	if len(requests) != 3 || requests[2].Limit != 0 || requests[2].Continue != "" || requests[2].LabelSelector != "x=y" {
		t.Errorf("requests: %+v, want the first page, its continue, then one whole list with the same selector", requests)
	}
}
