package refresh

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/rbac"
)

// hostPort splits an httptest server's address into the pod IP and port
// a Hook is sent to.
func hostPort(t *testing.T, srv *httptest.Server) (string, int) {
	t.Helper()
	u, _ := url.Parse(srv.URL)
	host, port, _ := net.SplitHostPort(u.Host)
	n, _ := strconv.Atoi(port)
	return host, n
}

func TestDirectHookSender(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Method+" "+r.URL.RequestURI())
		if r.URL.Path == "/fail" {
			http.Error(w, "bad config: line 3", http.StatusInternalServerError)
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	defer srv.Close()
	ip, port := hostPort(t, srv)
	s := DirectHookSender{}
	resp, err := s.Send(context.Background(), "ns", "web-1", &Hook{Method: "PUT", Port: port, Path: "/-/reload?x=1", podIP: ip})
	if err != nil || resp.Status != 200 || string(resp.Body) != "ok" {
		t.Errorf("PUT: %+v, %v", resp, err)
	}
	resp, err = s.Send(context.Background(), "ns", "web-1", &Hook{Method: "POST", Port: port, Path: "/fail", podIP: ip})
	if err != nil || resp.Status != 500 || string(resp.Body) != "bad config: line 3\n" {
		t.Errorf("POST /fail: %+v, %v", resp, err)
	}
	if want := []string{"PUT /-/reload?x=1", "POST /fail"}; !reflect.DeepEqual(got, want) {
		t.Errorf("the server saw %q, want %q", got, want)
	}
	if _, err := s.Send(context.Background(), "ns", "web-1", &Hook{Method: "POST", Port: port, Path: "/"}); err == nil || err.Error() != "pod web-1 has no IP address" {
		t.Errorf("no pod IP: %v", err)
	}
}

// A refused connection is tried again a bounded number of times: a port
// that opens meanwhile is reached; one that never does fails after the
// backoff's steps.
func TestDirectHookSenderRetriesARefusedConnection(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().(*net.TCPAddr)
	l.Close() // refused until the server below starts on it
	var dials atomic.Int32
	c := &http.Client{Timeout: time.Second, Transport: &http.Transport{DialContext: func(ctx context.Context, network, a string) (net.Conn, error) {
		dials.Add(1)
		return (&net.Dialer{}).DialContext(ctx, network, a)
	}}}
	b := wait.Backoff{Steps: 3, Duration: 10 * time.Millisecond, Factor: 1}
	s := DirectHookSender{Client: c, Backoff: &b}
	h := &Hook{Method: "POST", Port: addr.Port, Path: "/", podIP: "127.0.0.1"}
	if _, err := s.Send(context.Background(), "ns", "web-1", h); err == nil || !strings.Contains(err.Error(), "connection refused") || dials.Load() != 3 {
		t.Errorf("never open: %v after %d dials, want connection refused after 3", err, dials.Load())
	}
	dials.Store(0)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	c.Transport.(*http.Transport).DialContext = func(ctx context.Context, network, a string) (net.Conn, error) {
		if dials.Add(1) == 2 {
			l, err := net.Listen("tcp", a)
			if err != nil {
				return nil, err
			}
			srv.Listener = l
			srv.Start()
		}
		return (&net.Dialer{}).DialContext(ctx, network, a)
	}
	defer func() {
		if srv.Listener != nil {
			srv.Close()
		}
	}()
	if resp, err := s.Send(context.Background(), "ns", "web-1", h); err != nil || resp.Status != 204 || dials.Load() != 2 {
		t.Errorf("opened on the second try: %+v, %v after %d dials", resp, err, dials.Load())
	}
}

// The proxy sender asks the API server for pods/NAME:PORT/proxy/PATH with
// the hook's method and query, and hands back the status and body it
// relays.
func TestProxyHookSender(t *testing.T) {
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Method + " " + r.URL.RequestURI()
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, "not ready: reloading")
	}))
	defer srv.Close()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL + "/prefix"})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := ProxyHookSender{Client: cs}.Send(context.Background(), "shop", "web-1", &Hook{Method: "POST", Port: 9090, Path: "/-/reload/?x=a+b"})
	if err != nil || resp.Status != 503 || string(resp.Body) != "not ready: reloading" {
		t.Errorf("answer %+v, %v", resp, err)
	}
	if want := "POST /prefix/api/v1/namespaces/shop/pods/web-1:9090/proxy/-/reload/?x=a+b"; got != want {
		t.Errorf("request %q, want %q", got, want)
	}
	if _, err := (ProxyHookSender{}).Send(context.Background(), "shop", "web-1", &Hook{Method: "GET", Port: 1, Path: "/"}); err == nil {
		t.Error("no client: no error")
	}
}

// Through the pod proxy a plan's hooks need pods/proxy (create for POST
// and PUT, get for GET), and a plan whose credentials lack it is refused
// before anything is sent; the direct transport needs nothing.
func TestHookPermissions(t *testing.T) {
	post, get := hookedAnnotation("a"), hookedAnnotation("b")
	get.Hook = &Hook{Request: "GET :9090", Method: "GET", Port: 9090, Path: "/"}
	invalid := hookedAnnotation("c")
	invalid.Hook = &Hook{Request: "PATCH :1", Error: "invalid"}
	plan := &Plan{Actions: []Action{post, get, invalid, hookedAnnotation("d")}}
	r := &Refresher{Config: Config{MaxRestarts: -1, DryRun: DryRunNone}, Cluster: Cluster{Hooks: ProxyHookSender{}, Access: fakeReviewer{"pods/proxy": errDenied}}}
	want := []Permission{
		{Verb: "patch", Resource: "pods", Namespace: "ns", Targets: []string{"pod/a", "pod/b", "pod/c", "pod/d"}},
		{Verb: "create", Resource: "pods/proxy", Namespace: "ns", Targets: []string{"pod/a", "pod/d"}},
		{Verb: "get", Resource: "pods/proxy", Namespace: "ns", Targets: []string{"pod/b"}},
	}
	if got := r.permissions(plan.Actions); !reflect.DeepEqual(got, want) {
		t.Errorf("permissions\n%+v\nwant\n%+v", got, want)
	}
	var pe *PermissionError
	if err := r.check(context.Background(), plan); !errors.As(err, &pe) ||
		err.Error() != `refused: the credentials lack create pods/proxy in namespace "ns" (for pod/a, pod/d); get pods/proxy in namespace "ns" (for pod/b); nothing was changed` {
		t.Errorf("check: %v", err)
	}
	r.Hooks = DirectHookSender{}
	if err := r.check(context.Background(), plan); err != nil {
		t.Errorf("direct: %v, want no pods/proxy needed", err)
	}
	for _, p := range want {
		if !rbac.Grants(rbac.RoleRefresh, p.Verb, p.Resource) {
			t.Errorf("%s is not granted by %s", p, rbac.RoleRefresh)
		}
	}
}

// A pod that answers its hook with a redirect is not followed, by either
// sender: the proxy's client would add the operator's credentials at the
// next hop, and the controller would reach what the pod names.
func TestHookSendersFollowNoRedirect(t *testing.T) {
	var elsewhere []string
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere = append(elsewhere, r.Method+" "+r.Header.Get("Authorization"))
	}))
	defer target.Close()
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/steal", http.StatusTemporaryRedirect)
	}))
	defer redirect.Close()
	ip, port := hostPort(t, redirect)
	resp, err := DirectHookSender{}.Send(context.Background(), "ns", "web-1", &Hook{Method: "POST", Port: port, Path: "/-/reload", podIP: ip})
	if err != nil || resp.Status != http.StatusTemporaryRedirect {
		t.Errorf("direct: %+v, %v; want the 307 itself", resp, err)
	}
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: redirect.URL, BearerToken: "operator-token"})
	if err != nil {
		t.Fatal(err)
	}
	resp, err = ProxyHookSender{Client: cs}.Send(context.Background(), "ns", "web-1", &Hook{Method: "POST", Port: 9090, Path: "/-/reload"})
	if err != nil || resp.Status != http.StatusTemporaryRedirect {
		t.Errorf("proxy: %+v, %v; want the 307 itself", resp, err)
	}
	if len(elsewhere) != 0 {
		t.Errorf("the redirect was followed: %q", elsewhere)
	}
	if r := judgeHook(&Hook{Method: "POST", Port: 9090, Path: "/-/reload"}, HookViaDirect, resp, nil); r.Outcome != HookFailed {
		t.Errorf("a redirect judged %s, want failed", r.Outcome)
	}
}

// A plan that is waited for reads its objects again by name: the
// pre-check asks get on each kind of object per namespace, and refuses a
// plan whose credentials could patch but never verify; a plan not waited
// for, or a dry run, needs no get.
func TestVerifyPermissions(t *testing.T) {
	restart := Action{Action: ActionRestart, Target: Target{"Deployment", "ns", "web"},
		Consumers: []Consumer{{Object: inspect.ObjectRef{Kind: "Secret", Namespace: "ns", Name: "tok"}, Pod: "web-1", Mode: inspect.ModeEnv}}}
	plain := hookedAnnotation("a")
	plain.Hook = nil
	plan := &Plan{Actions: []Action{plain, restart, hookedAnnotation("b")}}
	r := &Refresher{Config: Config{MaxRestarts: -1, DryRun: DryRunNone, Wait: true}, Cluster: Cluster{Hooks: DirectHookSender{},
		Access: fakeReviewer{"configmaps": errDenied}}}
	want := []Permission{
		{Verb: "patch", Resource: "deployments", Group: "apps", Namespace: "ns", Targets: []string{"deployment/web"}},
		{Verb: "patch", Resource: "pods", Namespace: "ns", Targets: []string{"pod/a", "pod/b"}},
		{Verb: "get", Resource: "configmaps", Namespace: "ns", Targets: []string{"configmap/cm"}},
		{Verb: "get", Resource: "secrets", Namespace: "ns", Targets: []string{"secret/tok"}},
	}
	if got := r.permissions(plan.Actions); !reflect.DeepEqual(got, want) {
		t.Errorf("permissions with --wait\n%+v\nwant\n%+v", got, want)
	}
	var pe *PermissionError
	if err := r.check(context.Background(), plan); !errors.As(err, &pe) ||
		err.Error() != `refused: the credentials lack get configmaps in namespace "ns" (for configmap/cm); nothing was changed` {
		t.Errorf("check: %v", err)
	}
	r.Wait = false // pod b's hook is still sent after its verified remount, within --timeout
	r.Timeout = time.Minute
	if got := r.permissions(plan.Actions); len(got) != 3 || got[2].Resource != "configmaps" {
		t.Errorf("hooks waited for: %+v, want the patches and get configmaps (pod b's object), not get secrets", got)
	}
	r.Timeout = 0
	if got := r.permissions(plan.Actions); len(got) != 2 {
		t.Errorf("nothing waited for: %+v, want the patches only", got)
	}
	r.Wait, r.DryRun = true, DryRunServer
	for _, p := range r.permissions(plan.Actions) {
		if p.Verb == "get" {
			t.Errorf("dry run: %+v, want no get", p)
		}
	}
}
