package refresh

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// FuzzParseHook: any kubectl-cmsync.io/reload-hook value (a namespace's
// user writes it) parses or fails without a panic; a parsed one has a
// method of three, a port number or a valid port name, and a path that
// badHookPath accepts (it goes into the API server's pod proxy URL); it
// resolves on a pod, hostNetwork or not, and as sent (String) it parses
// to itself.
func FuzzParseHook(f *testing.F) {
	for _, seed := range []string{"POST :9090/-/reload", ":8080", "GET :admin/reload?x=1", "PUT :1/a/b/", "PATCH :9090", ":0", ":65536",
		":http/../x", ":9090/%2e%2e/x", ":9090//x", "POST  :9090  extra", ":9090/\x00", ":-port", ":" + strings.Repeat("9", 30), "\u00a0:1", ""} {
		f.Add(seed, false)
	}
	f.Add("POST :metrics/-/reload", true)
	f.Fuzz(func(t *testing.T, value string, hostNetwork bool) {
		s, err := ParseHook(value)
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Annotations: map[string]string{ReloadHookAnnotation: value}},
			Spec: corev1.PodSpec{HostNetwork: hostNetwork, Containers: []corev1.Container{{Name: "c", Ports: []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9090}}}}}}
		h := ResolveHook(nil, pod, false)
		if h == nil || h.Request != value {
			t.Fatalf("ResolveHook(%q) = %+v", value, h)
		}
		if err != nil {
			if s != (HookSpec{}) || h.Error == "" || !strings.Contains(err.Error(), ReloadHookAnnotation) {
				t.Fatalf("ParseHook(%q): %+v, %v; resolved %+v", value, s, err, h)
			}
			return
		}
		switch {
		case s.Method != "GET" && s.Method != "POST" && s.Method != "PUT":
			t.Fatalf("ParseHook(%q): method %q", value, s.Method)
		case s.PortName == "" && (s.Port < 1 || s.Port > 65535):
			t.Fatalf("ParseHook(%q): port %d", value, s.Port)
		case s.PortName != "" && (s.Port != 0 || len(validation.IsValidPortName(s.PortName)) > 0):
			t.Fatalf("ParseHook(%q): port name %q (%d)", value, s.PortName, s.Port)
		case !strings.HasPrefix(s.Path, "/") || badHookPath(s.Path) != "":
			t.Fatalf("ParseHook(%q): path %q", value, s.Path)
		}
		if hostNetwork && h.sendable() {
			t.Fatalf("ResolveHook(%q) on a hostNetwork pod is sendable: %+v", value, h)
		}
		if h.sendable() {
			again, err := ParseHook(h.String())
			if err != nil || again.Method != s.Method || again.Port != h.Port || again.Path != s.Path {
				t.Fatalf("%q sent as %q parses to %+v, %v", value, h.String(), again, err)
			}
		}
	})
}
