package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fakeAPIServer answers the LISTs status makes in namespace shop: the given
// pods, no other object; everything else is 404.
func fakeAPIServer(t *testing.T, pods ...corev1.Pod) *httptest.Server {
	t.Helper()
	lists := map[string]any{
		"/api/v1/namespaces/shop/pods":               corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, Items: pods},
		"/api/v1/namespaces/shop/configmaps":         corev1.ConfigMapList{TypeMeta: metav1.TypeMeta{Kind: "ConfigMapList", APIVersion: "v1"}},
		"/api/v1/nodes":                              corev1.NodeList{TypeMeta: metav1.TypeMeta{Kind: "NodeList", APIVersion: "v1"}},
		"/apis/apps/v1/namespaces/shop/replicasets":  map[string]any{"kind": "ReplicaSetList", "apiVersion": "apps/v1", "items": []any{}},
		"/apis/apps/v1/namespaces/shop/deployments":  map[string]any{"kind": "DeploymentList", "apiVersion": "apps/v1", "items": []any{}},
		"/apis/apps/v1/namespaces/shop/statefulsets": map[string]any{"kind": "StatefulSetList", "apiVersion": "apps/v1", "items": []any{}},
		"/apis/apps/v1/namespaces/shop/daemonsets":   map[string]any{"kind": "DaemonSetList", "apiVersion": "apps/v1", "items": []any{}},
		"/apis/batch/v1/namespaces/shop/jobs":        map[string]any{"kind": "JobList", "apiVersion": "batch/v1", "items": []any{}},
		"/apis/batch/v1/namespaces/shop/cronjobs":    map[string]any{"kind": "CronJobList", "apiVersion": "batch/v1", "items": []any{}},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l, ok := lists[r.URL.Path]
		w.Header().Set("Content-Type", "application/json")
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			json.NewEncoder(w).Encode(map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404,
				"message": "the server could not find the requested resource"})
			return
		}
		json.NewEncoder(w).Encode(l)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// apiStatus is an API server that answers every request with one Status.
func apiStatus(t *testing.T, code int, reason, message string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Failure",
			"reason": reason, "code": code, "message": message, "details": map[string]any{"kind": "pods"}})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// envPod is a running bare pod in shop whose container reads ConfigMap
// "settings" (absent) through an env variable.
func envPod() corev1.Pod {
	return corev1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api"},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "app", Env: []corev1.EnvVar{{Name: "MODE",
			ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Key: "mode"}}}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}}
}

// TestExitCodesAndMessages: every failure class, the exit code and the
// exact text on stderr (what main prints: the command's own lines, then
// "error: ..."), one row each. README.md's "Exit codes" section lists them.
func TestExitCodesAndMessages(t *testing.T) {
	// result: stderr as the process writes it (the command's own lines,
	// then main's ErrorText) and the error Execute returned.
	type result struct {
		stderr string
		err    error
	}
	// root runs `kubectl cmsync ARGS` against server (a URL; "" for none).
	root := func(server string, args ...string) func(t *testing.T) result {
		return func(t *testing.T) result {
			if server != "" {
				writeStatusKubeconfig(t, server, "shop")
			} else {
				writeStatusKubeconfig(t, "https://127.0.0.1:1", "shop")
			}
			_, errOut, err := runStatusRoot(t, args...)
			return result{errOut + ErrorText(err), err}
		}
	}
	// runRefresh runs refresh on staleEnvFixture with the flags set sets.
	runRefresh := func(set func(o *RefreshOptions)) func(t *testing.T) result {
		return func(t *testing.T) result {
			o, _, _ := staleEnvFixture(t)
			var errOut bytes.Buffer
			o.ErrOut = &errOut
			set(o)
			err := o.Run(context.Background())
			return result{errOut.String() + ErrorText(err), err}
		}
	}
	closed := func() string {
		srv := httptest.NewServer(http.NotFoundHandler())
		addr := srv.Listener.Addr().String()
		srv.Close()
		return "http://" + addr
	}()
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	defer slow.Close()
	forbidden := apiStatus(t, http.StatusForbidden, "Forbidden", `pods is forbidden: User "dev" cannot list resource "pods" in API group "" in the namespace "shop"`)
	unauthorized := apiStatus(t, http.StatusUnauthorized, "Unauthorized", "Unauthorized")
	empty := fakeAPIServer(t)
	missing := fakeAPIServer(t, envPod())

	cases := []struct {
		name   string
		run    func(t *testing.T) result
		code   int
		stderr string
	}{
		{"usage: unknown flag", root("", "status", "--bogus"), ExitUsage,
			"error: unknown flag: --bogus\nSee 'kubectl cmsync status --help' for usage.\n"},
		{"usage: unknown command", root("", "frobnicate"), ExitUsage,
			"error: unknown command \"frobnicate\" for \"kubectl cmsync\"\nRun 'kubectl cmsync --help' for usage.\n"},
		{"usage: bad output format", root("", "status", "-o", "xml"), ExitUsage,
			"error: unable to match a printer suitable for the output format \"xml\", allowed formats are: wide,json,yaml\n"},
		{"usage: bad flag value", root("", "refresh", "--strategy", "reboot"), ExitUsage,
			"error: invalid --strategy \"reboot\": must be one of auto, annotate, restart\n"},
		{"usage: unsupported resource type", root("", "status", "service/web"), ExitUsage,
			"error: unsupported resource type \"service\" in \"service/web\": use NAME (a ConfigMap) or TYPE/NAME, TYPE one of configmap (cm), secret, deployment (deploy), statefulset (sts), daemonset (ds), replicaset (rs), job, cronjob (cj), pod (po), rollout (ro), or their plurals\n"},
		{"workload not found", root(empty.URL, "status", "deploy/web"), ExitFailure,
			"error: deployments.apps \"web\" not found in namespace \"shop\": check the name and the namespace (-n), or list them with 'kubectl get deployments -n shop'\n"},
		{"not found", root(empty.URL, "status", "settings"), ExitFailure,
			"error: configmap \"settings\" not found in namespace \"shop\", and no pod consumes it: check the name and the namespace (-n), or list the objects with 'kubectl cmsync status --unused'\n"},
		{"forbidden", root(forbidden.URL, "status"), ExitFailure,
			"error: cannot list pods in namespace \"shop\": forbidden (pods is forbidden: User \"dev\" cannot list resource \"pods\" in API group \"\" in the namespace \"shop\")\n" +
				"A Role with this rule grants it: {apiGroups: [\"\"], resources: [\"pods\"], verbs: [\"list\"]}\n"},
		{"unauthorized", root(unauthorized.URL, "status"), ExitFailure,
			"error: the API server at " + unauthorized.URL + " rejected the credentials (Unauthorized): check your kubeconfig user, or log in again\n"},
		{"unreachable server", root(closed, "status"), ExitFailure,
			"error: cannot reach the Kubernetes API server at " + closed + " (dial tcp " + strings.TrimPrefix(closed, "http://") + ": connect: connection refused): check that the cluster is running and that --context/--kubeconfig point at it\n"},
		{"timeout", root(slow.URL, "status", "--request-timeout", "1s"), ExitFailure,
			"error: the API server at " + slow.URL + " did not answer in time; retry, or raise --request-timeout\n"},
		{"check failed", root(missing.URL, "status", "--check"), ExitCheck,
			"check failed: 1 of 1 uses need attention:\n" +
				"  configmap/settings pod/api app env (namespace shop): missing: ConfigMap \"settings\" does not exist; required, so the container cannot start until it is created\n"},
		{"diff found differences", func(t *testing.T) result {
			_, errOut, err := runDiff(t, cfgKey, nil)
			return result{errOut + ErrorText(err), err}
		}, ExitCheck, ""},
		{"refresh left consumers not current", runRefresh(func(o *RefreshOptions) { o.Strategy, o.Wait = "annotate", false }), ExitCheck, "error: 1 actions left consumers not current:\n" +
			"  deployment/web: manual: env use is stale and stays so with --strategy annotate: restart the workload (--strategy auto or restart)\n"},
		{"refused: restarts without a terminal", runRefresh(func(o *RefreshOptions) {}), ExitRefused, "error: refused: the plan restarts 1 workloads and stdin is not a terminal to confirm it; add --yes to proceed, or --strategy annotate to restart nothing\n"},
		{"refused: over --max-restarts", runRefresh(func(o *RefreshOptions) { o.MaxRestarts, o.Yes = 0, true }), ExitRefused, "error: refused: the plan restarts 1 workloads, more than --max-restarts=0; nothing was changed. Raise --max-restarts, narrow the selection (NAME, -l), or --strategy annotate to restart nothing\n"},
		{"forbidden: refresh lacks a permission", runRefresh(func(o *RefreshOptions) {
			o.Yes, o.Cluster.Access = true, denyingReviewer{"deployments": true}
		}), ExitFailure, "error: cannot refresh: the credentials lack permissions the plan needs; nothing was changed:\n" +
			"  patch deployments in namespace \"ns\" (for deployment/web): a Role with this rule grants it: {apiGroups: [\"apps\"], resources: [\"deployments\"], verbs: [\"patch\"]}\n" +
			"The ClusterRole cmsync-refresh of deploy/rbac.yaml grants what refresh needs (with cmsync-secrets where Secrets are read).\n"},
		{"dashboard without a terminal", root(empty.URL, "dashboard"), ExitFailure, "error: the dashboard needs a terminal (stdin and stdout); for scripts use 'kubectl cmsync status --verify -o json'\n"},
		{"unreadable kubeconfig", func(t *testing.T) result {
			path := filepath.Join(t.TempDir(), "kubeconfig")
			os.WriteFile(path, []byte("clusters: [this is not a kubeconfig"), 0o600)
			t.Setenv("KUBECONFIG", path)
			_, errOut, err := runStatusRoot(t, "status")
			return result{errOut + strings.ReplaceAll(ErrorText(err), path, "KUBECONFIG"), err}
		}, ExitFailure, "error: cannot read the kubeconfig: error loading config file \"KUBECONFIG\": yaml: line 1: did not find expected ',' or ']'\n" +
			"Fix it, or point --kubeconfig (or KUBECONFIG) at a valid one\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.run(t)
			stderr := r.stderr
			if code := ExitCode(r.err); code != tc.code || stderr != tc.stderr {
				t.Errorf("exit %d, stderr:\n%s\nwant exit %d, stderr:\n%s", code, stderr, tc.code, tc.stderr)
			}
		})
	}
}
