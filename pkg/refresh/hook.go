package refresh

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/text"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// ReloadHookAnnotation on a Deployment, StatefulSet or DaemonSet, its pod
// template, or a bare pod asks that each pod be told, once its volumes are
// remounted and verified current, by one HTTP request: "[METHOD] :PORT[/PATH]",
// e.g. "POST :9090/-/reload" (Prometheus). Such a workload is remounted and
// hooked, never restarted for a volume use.
const ReloadHookAnnotation = "kubectl-cmsync.io/reload-hook"

// hookSyntax is what an invalid value is told to write.
const hookSyntax = `write "[GET|POST|PUT] :PORT[/PATH]" (PORT a number or a container port's name), e.g. "POST :9090/-/reload"`

// Hook is the request of a pod's reload hook, as planned: the
// annotation's value (Request), parsed, or why it cannot be sent (Error).
type Hook struct {
	// Request is the annotation's value, as written.
	Request string `json:"request"`
	Method  string `json:"method,omitempty"`
	// Port is the port's number; PortName the container port it names,
	// when the value named one.
	Port     int    `json:"port,omitempty"`
	PortName string `json:"portName,omitempty"`
	Path     string `json:"path,omitempty"`
	// Error says why the value cannot be sent, and what to write.
	Error string `json:"error,omitempty"`
	// podIP is where the direct transport sends it.
	podIP string
}

// HookSpec is a parsed reload hook value: a port number, or the name of a
// container port (resolved on the pod by ResolveHook).
type HookSpec struct {
	Method   string
	Port     int
	PortName string
	Path     string
}

// ParseHook parses a ReloadHookAnnotation value, strictly: an optional
// method (GET, POST or PUT; POST by default), then ":PORT" (1-65535, or
// a port name), then an optional path from "/" (default "/") without ".",
// ".." or empty segments, "%" or "#", since it is appended to the API
// server's pod proxy URL. The error says what is wrong and what to write.
func ParseHook(value string) (HookSpec, error) {
	fail := func(format string, a ...any) (HookSpec, error) {
		return HookSpec{}, fmt.Errorf("%s %q: %s; %s", ReloadHookAnnotation, value, fmt.Sprintf(format, a...), hookSyntax)
	}
	fields := strings.Fields(value)
	s := HookSpec{Method: "POST"}
	switch {
	case len(fields) == 0:
		return fail("empty")
	case len(fields) > 2:
		return fail("unexpected %q after %q", strings.Join(fields[2:], " "), fields[0]+" "+fields[1])
	case len(fields) == 2:
		if m := fields[0]; m != "GET" && m != "POST" && m != "PUT" {
			return fail("method %q is not one of GET, POST, PUT (in capitals)", m)
		}
		s.Method = fields[0]
	}
	rest := fields[len(fields)-1]
	if !strings.HasPrefix(rest, ":") {
		return fail("no port: %q does not start with \":\"", rest)
	}
	port, path, _ := strings.Cut(rest[1:], "/")
	path = "/" + path
	switch {
	case port == "":
		return fail("no port after \":\"")
	case port[0] >= '0' && port[0] <= '9':
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return fail("port %q is not a number from 1 to 65535", port)
		}
		s.Port = n
	default:
		if errs := validation.IsValidPortName(port); len(errs) > 0 {
			return fail("port name %q is not valid (%s)", port, errs[0])
		}
		s.PortName = port
	}
	if why := badHookPath(path); why != "" {
		return fail("path %q %s", path, why)
	}
	s.Path = path
	return s, nil
}

// badHookPath says why a hook's path is refused, or "". The path goes
// into the API server's URL after .../pods/NAME:PORT/proxy: a "." or ".."
// segment, or an escape that may be one, could reach another resource
// with the caller's credentials.
func badHookPath(p string) string {
	if i := strings.IndexAny(p, "%#\\"); i >= 0 {
		return fmt.Sprintf("contains %q", string(p[i]))
	}
	for _, r := range p {
		if r < 0x21 || r == 0x7f {
			return "contains a control character"
		}
	}
	path, _, _ := strings.Cut(p, "?")
	segs := strings.Split(path, "/")[1:]
	for i, seg := range segs {
		if seg == "." || seg == ".." || (seg == "" && i < len(segs)-1) {
			return `has an empty, "." or ".." segment`
		}
	}
	return ""
}

// ResolveHook is the hook of pod: the annotation's value read on the
// workload (workload, nil for a bare pod), else on the pod (which carries
// its template's annotations), parsed, a port name resolved on the pod's
// containers. nil when neither sets the annotation; a Hook with Error when
// the value is invalid, names no port of the pod, or the pod is on the
// node's network and allowHostNetwork (--reload-hook-host-network) is not
// set: its address is the node's, so the request would reach whatever
// listens on that port of the node, not the pod.
func ResolveHook(workload map[string]string, pod *corev1.Pod, allowHostNetwork bool) *Hook {
	value, ok := workload[ReloadHookAnnotation]
	if !ok && pod != nil {
		value, ok = pod.Annotations[ReloadHookAnnotation]
	}
	if !ok {
		return nil
	}
	h := &Hook{Request: value}
	s, err := ParseHook(value)
	if err != nil {
		h.Error = err.Error()
		return h
	}
	h.Method, h.Port, h.PortName, h.Path = s.Method, s.Port, s.PortName, s.Path
	if pod != nil {
		h.podIP = pod.Status.PodIP
		if s.PortName != "" {
			if h.Port = namedPort(pod, s.PortName); h.Port == 0 {
				h.Error = fmt.Sprintf("%s %q: pod %s has no container port named %q; name one of its ports, or write the number", ReloadHookAnnotation, value, pod.Name, s.PortName)
				return h
			}
		}
		if pod.Spec.HostNetwork && !allowHostNetwork {
			h.Error = fmt.Sprintf("%s %q: pod %s uses hostNetwork, so its address is the node's and the request would reach whatever listens on port %d of the node; not sent (%s allows it)",
				ReloadHookAnnotation, value, pod.Name, h.Port, HookHostNetworkFlag)
		}
	}
	return h
}

// HookHostNetworkFlag is the flag that lets reload hooks go to pods with
// hostNetwork (Config.HookHostNetwork).
const HookHostNetworkFlag = "--reload-hook-host-network"

// namedPort is the number of the container port of pod named name, 0 when
// none is.
func namedPort(pod *corev1.Pod, name string) int {
	for _, cs := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for _, c := range cs {
			for _, p := range c.Ports {
				if p.Name == name {
					return int(p.ContainerPort)
				}
			}
		}
	}
	return 0
}

// plan is what the plan's reason says of the hook.
func (h *Hook) plan() string {
	if h.Error != "" {
		return "its reload hook is invalid and is not sent: " + h.Error
	}
	return "then reload hook " + h.String() + " once verified current (" + ReloadHookAnnotation +
		": remounted and told, never restarted for a volume use)"
}

// String is the request as sent to the pod: "POST :9090/-/reload".
func (h *Hook) String() string {
	if h == nil {
		return ""
	}
	if h.Error != "" {
		return h.Request
	}
	return fmt.Sprintf("%s :%d%s", h.Method, h.Port, h.Path)
}

// HookOutcome is how a pod's reload hook ended.
type HookOutcome string

const (
	HookOK      HookOutcome = "ok"       // sent after the verified remount; a 2xx answer
	HookFailed  HookOutcome = "failed"   // sent; another status, or no answer
	HookNotSent HookOutcome = "not-sent" // the remount was not verified (timeout, failure, dry run)
	HookInvalid HookOutcome = "invalid"  // the annotation cannot be sent: its Message says what to write
)

// HookResult is what became of an annotated pod's reload hook.
type HookResult struct {
	Request string      `json:"request"`
	Outcome HookOutcome `json:"outcome"`
	// Via is the transport (HookViaDirect, HookViaProxy) of a sent hook.
	Via string `json:"via,omitempty"`
	// Status is the HTTP status answered.
	Status  int    `json:"status,omitempty"`
	Message string `json:"message,omitempty"`
}

// String says what became of the hook, in one line: "reload hook POST
// :9090/-/reload: ok (HTTP 200, via proxy)", failed with the status and an
// excerpt of the answer, not sent and why, or invalid and what to write;
// "" for no hook.
func (h *HookResult) String() string {
	if h == nil {
		return ""
	}
	s := "reload hook " + h.Request + ": " + string(h.Outcome)
	var about []string
	if h.Outcome == HookOK && h.Status != 0 {
		about = append(about, fmt.Sprintf("HTTP %d", h.Status))
	}
	if h.Via != "" {
		about = append(about, "via "+h.Via)
	}
	if len(about) > 0 {
		s += " (" + strings.Join(about, ", ") + ")"
	}
	if h.Message != "" {
		s += ": " + h.Message
	}
	return s
}

// hookExcerpt is how much of a failed answer's body a result quotes.
const hookExcerpt = 120

// judgeHook is the result of a sent hook: 2xx is ok; another status is
// failed with a short excerpt of the body, control characters escaped.
func judgeHook(h *Hook, via string, resp HookResponse, err error) *HookResult {
	r := &HookResult{Request: h.String(), Via: via, Status: resp.Status}
	switch {
	case err != nil:
		r.Outcome, r.Message = HookFailed, "no answer: "+text.Printable(err.Error())
	case resp.Status >= 200 && resp.Status < 300:
		r.Outcome = HookOK
	default:
		r.Outcome, r.Message = HookFailed, fmt.Sprintf("HTTP %d", resp.Status)
		if b := strings.TrimSpace(string(resp.Body)); b != "" {
			r.Message += ": " + text.Printable(text.TruncateBytes(b, hookExcerpt, "..."))
		}
	}
	return r
}

// sendable tells a hook that is sent once its pod is verified current.
func (h *Hook) sendable() bool { return h != nil && h.Error == "" }

// sendHook sends r's hook once, now that its pod is verified current, and
// records the result on r.
func sendHook(ctx context.Context, r *Result, s HookSender) {
	h := r.Action.Hook
	if s == nil {
		r.Hook = &HookResult{Request: h.String(), Outcome: HookNotSent, Message: "no transport for reload hooks"}
		return
	}
	resp, err := s.Send(ctx, r.Target.Namespace, r.Target.Name, h)
	r.Hook = judgeHook(h, s.Via(), resp, err)
}

// finishHooks gives every hooked result that has no hook result yet the
// reason its hook was not sent: an invalid value, or a remount that was
// not verified current.
func finishHooks(results []Result) []Result {
	for i := range results {
		r := &results[i]
		h := r.Action.Hook
		if h == nil || r.Hook != nil {
			continue
		}
		res := &HookResult{Request: h.String(), Outcome: HookNotSent}
		switch {
		case h.Error != "":
			res.Outcome, res.Message = HookInvalid, h.Error+"; the pod was remounted all the same"
		case r.Outcome == OutcomeDryRun || r.Outcome == OutcomeNotApplied && r.Error == "":
			res.Message = "not sent: nothing was remounted (dry run)"
		case r.Outcome == OutcomeFailed || r.Outcome == OutcomeNotApplied:
			res.Message = "not sent: the annotation failed, so nothing was remounted"
		case r.Outcome == OutcomeTimeout:
			res.Message = "not sent: the remount was not verified current before the timeout"
		case r.Outcome == OutcomeUnverifiable:
			res.Message = "not sent: the remount cannot be verified (" + r.Detail + "), and a hook follows only a verified remount"
		case r.Outcome == OutcomeCurrent:
			res.Message = "not sent: the pod was replaced, and its new containers read the data when they started"
		default:
			res.Message = "not sent: the remount was not verified"
		}
		r.Hook = res
	}
	return results
}

// hookPermissions is what sending the actions' hooks through the pod proxy needs: the
// verb the API server maps the method to, on pods/proxy (create for POST, update for
// PUT, get for GET).
func hookPermissions(actions []Action) []Permission {
	var set permissionSet
	for _, a := range actions {
		if a.Action != ActionAnnotate || !a.Hook.sendable() {
			continue
		}
		verb := map[string]string{http.MethodGet: "get", http.MethodPut: "update"}[a.Hook.Method]
		if verb == "" {
			verb = "create"
		}
		set.add(verb, hookResource, a.Target.Namespace, a.Target.String())
	}
	return set.list
}

// hookResource is the API server's pod proxy.
const hookResource = "pods/proxy"

// hookSet is the reload hooks of the pods of a plan, by PodKey, with the
// warnings of the pods whose workload's annotations could not be read.
type hookSet struct {
	hooks    map[string]*Hook
	warnings map[string]string
}

// attach sets, on each annotation of a pod, the pod's reload hook (said
// in its reason), and the warning of a pod whose workload could not be
// read.
func (s hookSet) attach(actions []Action) {
	for i := range actions {
		a := &actions[i]
		if a.Action != ActionAnnotate || a.Target.Kind != "Pod" {
			continue
		}
		k := PodKey(a.Target.Namespace, a.Target.Name)
		if a.Hook == nil && s.hooks[k] != nil {
			a.Hook = s.hooks[k]
			a.Reason += "; " + a.Hook.plan()
		}
		if w := s.warnings[k]; w != "" && !contains(a.Warnings, w) {
			a.Warnings = append(a.Warnings, w)
		}
	}
}

// inSync turns the `none` of a pod with a reload hook, its mounts already
// in sync, into an annotation of it: the kubelet wrote the change before
// the plan (its own resync, or an earlier round that timed out), and the
// application is told all the same, once the annotated pod is verified.
func (s hookSet) inSync(actions []Action) {
	for i := range actions {
		a := &actions[i]
		if a.Action != ActionNone || a.Target.Kind != "Pod" || !s.hooks[PodKey(a.Target.Namespace, a.Target.Name)].sendable() {
			continue
		}
		a.Action, a.Pods = ActionAnnotate, []string{a.Target.Name}
		a.Reason = "mounts already in sync: annotated, so that its reload hook follows a verified remount"
	}
}

// resolveHooks reads the reload hook of every pod of items with a
// hot-updating use (the pods an annotation may concern): on its
// Deployment, StatefulSet or DaemonSet (each read once, through
// Annotations), else on the pod itself (which carries its template's
// annotations; a bare pod's own).
func (r *Refresher) resolveHooks(ctx context.Context, items []inspect.Use, pods map[string]*corev1.Pod) hookSet {
	s := hookSet{hooks: map[string]*Hook{}, warnings: map[string]string{}}
	type read struct {
		ann map[string]string
		err error
	}
	workloads := map[WorkloadKey]read{}
	for _, it := range items {
		k := PodKey(it.Object.Namespace, it.Pod.Name)
		if it.Pod.Name == "" || it.Verdict != inspect.VerdictHotUpdate || s.hooks[k] != nil {
			continue
		}
		var ann map[string]string
		if wk := workloadKey(it); Restartable[wk.Kind] && r.Annotations != nil {
			got, ok := workloads[wk]
			if !ok {
				got.ann, _, got.err = r.Annotations.Annotations(ctx, wk.Kind, wk.Namespace, wk.Name)
				workloads[wk] = got
			}
			if got.err != nil {
				s.warnings[k] = fmt.Sprintf("cannot read the annotations of %s %s (%v): a %s set on it, not on its pod template, is not sent",
					strings.ToLower(wk.Kind), wk.Name, got.err, ReloadHookAnnotation)
			}
			ann = got.ann
		}
		if h := ResolveHook(ann, pods[k], r.HookHostNetwork); h != nil {
			s.hooks[k] = h
		}
	}
	return s
}

// permissions is what applying actions needs: Permissions, plus pods/proxy
// for the reload hooks when they go through the API server's pod proxy,
// plus get on the objects read again to verify the actions when they are
// waited for (--wait, or hooks sent after the verified remount).
func (r *Refresher) permissions(actions []Action) []Permission {
	perms := Permissions(actions, r.DryRun)
	if r.DryRun != DryRunNone {
		return perms
	}
	if r.Hooks != nil && r.Hooks.Via() == HookViaProxy {
		perms = append(perms, hookPermissions(actions)...)
	}
	waited := actions
	if !r.Wait { // only the hooked pods are waited for, within --timeout
		waited = nil
		for _, a := range actions {
			if r.Timeout > 0 && a.Action == ActionAnnotate && a.Hook.sendable() {
				waited = append(waited, a)
			}
		}
	}
	return append(perms, verifyPermissions(waited)...)
}

// verifyPermissions is get on the ConfigMaps and Secrets the actions'
// consumers read, per namespace: the wait reads each of them again by name
// (a Secret only where Secrets are read at all).
func verifyPermissions(actions []Action) []Permission {
	resources := map[string]string{inspect.KindConfigMap: "configmaps", inspect.KindSecret: "secrets"}
	var set permissionSet
	for _, a := range actions {
		if a.Action != ActionAnnotate && a.Action != ActionRestart && a.Action != ActionEvict {
			continue
		}
		for _, c := range a.Consumers {
			if res, ok := resources[c.Object.Kind]; ok {
				set.add("get", res, c.Object.Namespace, strings.ToLower(c.Object.Kind+"/"+c.Object.Name))
			}
		}
	}
	return set.list
}
