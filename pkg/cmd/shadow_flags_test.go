package cmd

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestShadowFlagsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    func(*ShadowFlags)
		dry  string
		want string
	}{
		{"ok", func(*ShadowFlags) {}, "client", ""},
		{"server dry run", func(*ShadowFlags) {}, "server", "--dry-run=server"},
		{"window shorter than max-wait", func(f *ShadowFlags) { f.Window = 10 * time.Second }, "client", "--shadow-window"},
		{"bad name", func(f *ShadowFlags) { f.Name = "Bad_Name" }, "client", "--shadow-record"},
		{"too big", func(f *ShadowFlags) { f.MaxBytes = 2 << 20 }, "client", "--shadow-record-max-bytes"},
	} {
		f := defaultShadowFlags()
		f.Shadow = true
		tc.f(&f)
		err := f.validate(tc.dry, 30*time.Second)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestCannotWatchWorkloads: the double-restart watch is started only when
// the access reviews allow list and watch on the three workload kinds; the
// first refusal is named.
func TestCannotWatchWorkloads(t *testing.T) {
	for _, tc := range []struct {
		name    string
		refused string // "verb resource" the reviewer refuses; "error" fails every review
		ns      string
		want    string
		rule    string
	}{
		{"all allowed", "", "shop", "", ""},
		{"watch statefulsets refused", "watch statefulsets", "shop", `watch statefulsets in namespace "shop"`,
			`{apiGroups: ["apps"], resources: ["statefulsets"], verbs: ["watch"]}`},
		{"list deployments refused, every namespace", "list deployments", "", "list deployments in every namespace",
			`{apiGroups: ["apps"], resources: ["deployments"], verbs: ["list"]}`},
		{"the reviews fail", "error", "shop", "", ""},
	} {
		cs := fake.NewClientset()
		cs.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
			if tc.refused == "error" {
				return true, nil, errors.New("the review failed")
			}
			rev := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
			ra := rev.Spec.ResourceAttributes
			if ra.Group != "apps" || ra.Namespace != tc.ns {
				t.Errorf("%s: review of %+v", tc.name, ra)
			}
			rev.Status.Allowed = ra.Verb+" "+ra.Resource != tc.refused
			return true, rev, nil
		})
		o := &WatchOptions{}
		o.Client = cs
		o.Namespace = tc.ns
		if got, rule := o.cannotWatchWorkloads(context.Background()); got != tc.want || rule != tc.rule {
			t.Errorf("%s: %q, %q; want %q, %q", tc.name, got, rule, tc.want, tc.rule)
		}
	}
}
