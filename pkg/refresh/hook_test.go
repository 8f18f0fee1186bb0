package refresh

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestParseHook(t *testing.T) {
	const syntax = `; write "[GET|POST|PUT] :PORT[/PATH]" (PORT a number or a container port's name), e.g. "POST :9090/-/reload"`
	for _, tc := range []struct {
		value string
		want  HookSpec
		err   string
	}{
		{value: "POST :9090/-/reload", want: HookSpec{Method: "POST", Port: 9090, Path: "/-/reload"}},
		{value: ":9090/-/reload", want: HookSpec{Method: "POST", Port: 9090, Path: "/-/reload"}},
		{value: ":8080", want: HookSpec{Method: "POST", Port: 8080, Path: "/"}},
		{value: "  GET   :1/ ", want: HookSpec{Method: "GET", Port: 1, Path: "/"}},
		{value: "PUT :65535/a/b/?x=1&y=2", want: HookSpec{Method: "PUT", Port: 65535, Path: "/a/b/?x=1&y=2"}},
		{value: "POST :http-admin/reload", want: HookSpec{Method: "POST", PortName: "http-admin", Path: "/reload"}},
		{value: "", err: `kubectl-cmsync.io/reload-hook "": empty` + syntax},
		{value: "   ", err: `kubectl-cmsync.io/reload-hook "   ": empty` + syntax},
		{value: "DELETE :9090/x", err: `kubectl-cmsync.io/reload-hook "DELETE :9090/x": method "DELETE" is not one of GET, POST, PUT (in capitals)` + syntax},
		{value: "post :9090/x", err: `kubectl-cmsync.io/reload-hook "post :9090/x": method "post" is not one of GET, POST, PUT (in capitals)` + syntax},
		{value: "POST 9090/x", err: `kubectl-cmsync.io/reload-hook "POST 9090/x": no port: "9090/x" does not start with ":"` + syntax},
		{value: "POST /-/reload", err: `kubectl-cmsync.io/reload-hook "POST /-/reload": no port: "/-/reload" does not start with ":"` + syntax},
		{value: "http://localhost:9090/-/reload", err: `kubectl-cmsync.io/reload-hook "http://localhost:9090/-/reload": no port: "http://localhost:9090/-/reload" does not start with ":"` + syntax},
		{value: "POST :/x", err: `kubectl-cmsync.io/reload-hook "POST :/x": no port after ":"` + syntax},
		{value: "POST :0/x", err: `kubectl-cmsync.io/reload-hook "POST :0/x": port "0" is not a number from 1 to 65535` + syntax},
		{value: "POST :65536", err: `kubectl-cmsync.io/reload-hook "POST :65536": port "65536" is not a number from 1 to 65535` + syntax},
		{value: "POST :90a", err: `kubectl-cmsync.io/reload-hook "POST :90a": port "90a" is not a number from 1 to 65535` + syntax},
		{value: "POST :Web", err: `kubectl-cmsync.io/reload-hook "POST :Web": port name "Web" is not valid (must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-))` + syntax},
		{value: "POST :9090 /x", err: `kubectl-cmsync.io/reload-hook "POST :9090 /x": unexpected "/x" after "POST :9090"` + syntax},
		{value: ":9090 /x", err: `kubectl-cmsync.io/reload-hook ":9090 /x": method ":9090" is not one of GET, POST, PUT (in capitals)` + syntax},
		{value: "POST :9090/x extra", err: `kubectl-cmsync.io/reload-hook "POST :9090/x extra": unexpected "extra" after "POST :9090/x"` + syntax},
		{value: "POST :9090/../secrets", err: `kubectl-cmsync.io/reload-hook "POST :9090/../secrets": path "/../secrets" has an empty, "." or ".." segment` + syntax},
		{value: "POST :9090/a/./b", err: `kubectl-cmsync.io/reload-hook "POST :9090/a/./b": path "/a/./b" has an empty, "." or ".." segment` + syntax},
		{value: "POST :9090//x", err: `kubectl-cmsync.io/reload-hook "POST :9090//x": path "//x" has an empty, "." or ".." segment` + syntax},
		{value: "POST :9090/%2e%2e/x", err: `kubectl-cmsync.io/reload-hook "POST :9090/%2e%2e/x": path "/%2e%2e/x" contains "%"` + syntax},
		{value: "POST :9090/x#y", err: `kubectl-cmsync.io/reload-hook "POST :9090/x#y": path "/x#y" contains "#"` + syntax},
		{value: "POST :9090/x\x1b", err: `kubectl-cmsync.io/reload-hook "POST :9090/x\x1b": path "/x\x1b" contains a control character` + syntax},
	} {
		got, err := ParseHook(tc.value)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("ParseHook(%q) error:\n got %v\nwant %s", tc.value, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseHook(%q) = %+v, %v; want %+v", tc.value, got, err, tc.want)
		}
	}
}

func TestResolveHook(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Annotations: map[string]string{ReloadHookAnnotation: "GET :admin/reload"}},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Ports: []corev1.ContainerPort{{Name: "admin", ContainerPort: 9901}}}}},
		Status: corev1.PodStatus{PodIP: "10.244.0.9"}}
	h := ResolveHook(nil, pod, false)
	if h == nil || h.Error != "" || h.Method != "GET" || h.Port != 9901 || h.PortName != "admin" || h.Path != "/reload" || h.podIP != "10.244.0.9" {
		t.Fatalf("from the pod: %+v", h)
	}
	if s := h.String(); s != "GET :9901/reload" {
		t.Errorf("String() = %q", s)
	}
	// the workload's own annotation wins over its template's (on the pod)
	if h := ResolveHook(map[string]string{ReloadHookAnnotation: "POST :9090/-/reload"}, pod, false); h.String() != "POST :9090/-/reload" || h.Error != "" {
		t.Errorf("the workload's: %+v", h)
	}
	if h := ResolveHook(map[string]string{}, &corev1.Pod{}, false); h != nil {
		t.Errorf("no annotation: %+v", h)
	}
	pod.Annotations[ReloadHookAnnotation] = "POST :metrics"
	want := `kubectl-cmsync.io/reload-hook "POST :metrics": pod web-1 has no container port named "metrics"; name one of its ports, or write the number`
	if h := ResolveHook(nil, pod, false); h == nil || h.Error != want {
		t.Errorf("unknown port name: %+v\nwant %s", h, want)
	}
	pod.Annotations[ReloadHookAnnotation] = "PATCH :9090"
	if h := ResolveHook(nil, pod, false); h == nil || h.Error == "" || h.Request != "PATCH :9090" || h.String() != "PATCH :9090" {
		t.Errorf("invalid: %+v", h)
	}
}

// TestHookInSync: the loop's plan annotates a pod with a reload hook whose
// mounts are in sync already (the kubelet wrote the change first), so that
// its application is told; a pod without a hook, or whose hook cannot be
// read, stays `none`, and so does every pod without HookInSync.
func TestHookInSync(t *testing.T) {
	hook := &Hook{Request: "POST :9090/-/reload", Method: "POST", Port: 9090, Path: "/-/reload"}
	s := hookSet{hooks: map[string]*Hook{"ns/hooked": hook, "ns/invalid": {Error: "bad"}}}
	none := func(pod string) Action {
		return Action{Action: ActionNone, Target: Target{Kind: "Pod", Namespace: "ns", Name: pod}, Reason: "already in-sync"}
	}
	actions := []Action{none("hooked"), none("plain"), none("invalid"),
		{Action: ActionNone, Target: Target{Kind: "ConfigMap", Namespace: "ns", Name: "hooked"}, Reason: "nothing consumes it"}}
	s.inSync(actions)
	s.attach(actions)
	got := map[string]string{}
	for _, a := range actions {
		got[a.Target.String()] = string(a.Action)
	}
	want := map[string]string{"pod/hooked": "annotate", "pod/plain": "none", "pod/invalid": "none", "configmap/hooked": "none"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s, want %s", k, got[k], v)
		}
	}
	if a := actions[0]; a.Hook != hook || len(a.Pods) != 1 || a.Pods[0] != "hooked" || !strings.Contains(a.Reason, "reload hook") {
		t.Errorf("the hooked pod's action %+v: want an annotation of it carrying its hook", a)
	}
}

// TestResolveHookHostNetwork: a pod on the node's network has the node's
// address, so a hook "to the pod" reaches whatever listens on the node: it
// is refused, the message naming the flag that allows it, and ends
// invalid; with the flag it is sent as any other.
func TestResolveHookHostNetwork(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "agent-1", Annotations: map[string]string{ReloadHookAnnotation: "POST :9090/-/reload"}},
		Spec: corev1.PodSpec{HostNetwork: true}, Status: corev1.PodStatus{PodIP: "192.168.1.7"}}
	h := ResolveHook(nil, pod, false)
	want := `kubectl-cmsync.io/reload-hook "POST :9090/-/reload": pod agent-1 uses hostNetwork, so its address is the node's and the request would reach whatever listens on port 9090 of the node; not sent (--reload-hook-host-network allows it)`
	if h == nil || h.Error != want || h.sendable() {
		t.Fatalf("hostNetwork pod: %+v\nwant error %s", h, want)
	}
	a := hookedAnnotation("agent-1")
	a.Hook = h
	got := finishHooks([]Result{{Action: a, Outcome: OutcomeCurrent}})
	if r := got[0].Hook; r.Outcome != HookInvalid || !strings.Contains(r.Message, "--reload-hook-host-network") || !strings.Contains(r.Message, "hostNetwork") {
		t.Errorf("result %s", r)
	}
	if h := ResolveHook(nil, pod, true); h == nil || h.Error != "" || !h.sendable() || h.String() != "POST :9090/-/reload" {
		t.Errorf("allowed: %+v", h)
	}
	pod.Spec.HostNetwork = false
	if h := ResolveHook(nil, pod, false); h == nil || h.Error != "" {
		t.Errorf("pod network: %+v", h)
	}
}
