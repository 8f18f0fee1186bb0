// Package inspect answers "who uses which ConfigMap or Secret, how, and is it
// current?". Everything here that decides is a pure function over plain
// Kubernetes objects; cluster I/O sits behind the small interfaces in
// snapshot.go and, for reading containers, internal/containerread (see
// verify.go).
package inspect

import (
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread"
)

// APIVersion is the apiVersion of every document the plugin prints.
const APIVersion = "cmsync.kubectl-cmsync.io/v1alpha1"

// Document kinds (design.md, the contract).
const (
	KindStatusReport  = "StatusReport"
	KindRefreshPlan   = "RefreshPlan"
	KindRefreshResult = "RefreshResult"
)

// Object kinds a use refers to.
const (
	KindConfigMap = "ConfigMap"
	KindSecret    = "Secret"
)

// Mode is how a container consumes the object.
type Mode string

const (
	ModeVolume      Mode = "volume"
	ModeItems       Mode = "items"
	ModeProjected   Mode = "projected"
	ModeSubPath     Mode = "subPath"
	ModeSubPathExpr Mode = "subPathExpr"
	ModeEnv         Mode = "env"
	ModeEnvFrom     Mode = "envFrom"
	ModeUnmounted   Mode = "unmounted"
)

// Verdict is the prediction for a use.
type Verdict string

const (
	VerdictHotUpdate      Verdict = "hot-update"
	VerdictRestartNeeded  Verdict = "restart-needed"
	VerdictBreaksOnChange Verdict = "breaks-on-change"
	VerdictNeverChanges   Verdict = "never-changes"
	VerdictMissing        Verdict = "missing"
	VerdictNotMounted     Verdict = "not-mounted"
)

// State is what --verify found.
type State string

const (
	StateInSync       State = "in-sync"
	StatePending      State = "pending"
	StateStale        State = "stale"
	StateCurrent      State = "current"
	StateBroken       State = "broken"
	StateUnverifiable State = "unverifiable"
	StateMissing      State = "missing"
	StateNA           State = "n/a"
)

// StateCause says why a use is unverifiable, in a word scripts can rely on
// (stateReason says it for people). It is set only with state unverifiable,
// and not for every such state: one without a cause may pass.
type StateCause string

const (
	// CauseSecretsNotRead: a Secret the use reads, or one that shares its
	// projected volume or may set its variables, was not read (--secrets).
	CauseSecretsNotRead StateCause = "secrets-not-read"
	// CauseVolumeNotWritable: the kubelet cannot write this volume from the
	// object as it is (e.g. two items at one path).
	CauseVolumeNotWritable StateCause = "volume-not-writable"
	// CauseNoShell: the image has no sh (or nothing to read the files with).
	CauseNoShell StateCause = "no-shell"
	// CauseExecForbidden: RBAC does not allow exec into the pod.
	CauseExecForbidden StateCause = "exec-forbidden"
	// CauseNotRunning: the pod or container is not running (yet).
	CauseNotRunning StateCause = "not-running"
	// CauseExecTimeout: the exec did not finish within --exec-timeout.
	CauseExecTimeout StateCause = "exec-timeout"
	// CauseExecFailed: the exec failed otherwise.
	CauseExecFailed StateCause = "exec-failed"
)

// Permanent reports whether reading again cannot change the answer
// without a change of flags, RBAC, image or object: waiting is pointless.
func (c StateCause) Permanent() bool {
	switch c {
	case CauseSecretsNotRead, CauseVolumeNotWritable, CauseNoShell, CauseExecForbidden:
		return true
	}
	return false
}

// causeOfVerifyError maps an VerifyError reason to a StateCause.
func causeOfVerifyError(reason string) StateCause {
	switch reason {
	case containerread.VerifyForbidden:
		return CauseExecForbidden
	case containerread.VerifyNoShell:
		return CauseNoShell
	case containerread.VerifyNotRunning:
		return CauseNotRunning
	case containerread.VerifyTimeout:
		return CauseExecTimeout
	}
	return CauseExecFailed
}

// ContainerType says which list of the pod spec a container comes from.
type ContainerType string

const (
	ContainerInit      ContainerType = "init"
	ContainerSidecar   ContainerType = "sidecar" // init container with restartPolicy Always
	ContainerRegular   ContainerType = "regular"
	ContainerEphemeral ContainerType = "ephemeral"
)

// DelayBasis says where a delay estimate came from.
type DelayBasis string

const (
	BasisDefault       DelayBasis = "default"
	BasisNodeTTL       DelayBasis = "node-ttl"
	BasisKubeletConfig DelayBasis = "kubelet-config"
)

// Report is the document printed by `status -o json|yaml`.
type Report struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Items      []Use  `json:"items"`
}

// NewReport wraps items in a StatusReport document.
func NewReport(items []Use) Report {
	if items == nil {
		items = []Use{}
	}
	return Report{APIVersion: APIVersion, Kind: KindStatusReport, Items: items}
}

// ObjectRef names the ConfigMap or Secret a use refers to.
type ObjectRef struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Exists    bool   `json:"exists"`
	Immutable bool   `json:"immutable"`
	// LastChange is the newest managedFields time (else the creation time).
	LastChange *metav1.Time `json:"lastChange,omitempty"`
}

// PodRef names the consuming pod. Its namespace is the object's (a pod reads
// ConfigMaps and Secrets of its own namespace only).
type PodRef struct {
	Name string `json:"name"`
	// UID tells a pod from an earlier one of the same name (a StatefulSet's
	// replacement pod, a re-created bare pod).
	UID   string `json:"uid,omitempty"`
	Node  string `json:"node,omitempty"`
	Phase string `json:"phase,omitempty"`
}

// ContainerRef names the consuming container.
type ContainerRef struct {
	Name string        `json:"name"`
	Type ContainerType `json:"type"`
}

// WorkloadRef is the top-level owner of the pod (kind Pod for a bare pod).
type WorkloadRef struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	// APIVersion is set for owners that are not one of the built-in workloads.
	APIVersion string `json:"apiVersion,omitempty"`
}

// VolumeRef describes the volume and mount of a volume use.
type VolumeRef struct {
	Name        string `json:"name"`
	MountPath   string `json:"mountPath,omitempty"`
	SubPath     string `json:"subPath,omitempty"`
	SubPathExpr string `json:"subPathExpr,omitempty"`
	ReadOnly    bool   `json:"readOnly,omitempty"`
	// Source is the place (from 1) of the use's source in a projected
	// volume that lists the same object more than once (e.g. with
	// different items): it tells those uses apart. 0 otherwise.
	Source int `json:"source,omitempty"`
}

// KeyPath is one item of a volume's `items`: a key written at a path.
type KeyPath struct {
	Key  string `json:"key"`
	Path string `json:"path"`
	Mode *int32 `json:"mode,omitempty"`
}

// Delay is the estimate of how long a hot-updating use takes to see a change.
type Delay struct {
	Min   metav1.Duration `json:"min"`
	Max   metav1.Duration `json:"max"`
	Basis DelayBasis      `json:"basis"`
}

// Use is one use of one ConfigMap or Secret by one container (or, for
// mode unmounted, one volume no container mounts). It is the row that the
// printers, the dashboard and the refresh planner all read.
type Use struct {
	// Context is the kubeconfig context the use was read in, set only when
	// a command reads more than one (--context a,b, --all-contexts).
	Context   string        `json:"context,omitempty"`
	Object    ObjectRef     `json:"object"`
	Pod       PodRef        `json:"pod,omitzero"`
	Container *ContainerRef `json:"container,omitempty"`
	Workload  WorkloadRef   `json:"workload,omitzero"`
	Mode      Mode          `json:"mode,omitempty"`
	Volume    *VolumeRef    `json:"volume,omitempty"`
	// Keys are the keys read; omitted when the use reads all of them.
	Keys []string `json:"keys,omitempty"`
	// KeyPaths are the key -> path mappings of a volume with `items` (the
	// projection of the use; empty for whole-object uses).
	KeyPaths []KeyPath `json:"items,omitempty"`
	// EnvName is the variable set by an env valueFrom use.
	EnvName string `json:"envName,omitempty"`
	// EnvPrefix is the prefix of an envFrom use.
	EnvPrefix string `json:"envPrefix,omitempty"`
	// DefaultMode is the volume's defaultMode, when set.
	DefaultMode *int32  `json:"defaultMode,omitempty"`
	Optional    bool    `json:"optional"`
	Verdict     Verdict `json:"verdict"`
	Reason      string  `json:"reason"`
	Delay       *Delay  `json:"delay,omitempty"`
	// RestartWindow is the restart window of the workload of a use that
	// needs a restart (NoteRestartWindows says when it opens).
	RestartWindow *RestartWindow `json:"restartWindow,omitempty"`

	// Filled by --verify.
	State       State  `json:"state,omitempty"`
	StateReason string `json:"stateReason,omitempty"`
	// StateCause classifies an unverifiable state for scripts and the
	// refresh planner (StateReason is for people).
	StateCause StateCause   `json:"stateCause,omitempty"`
	SyncedAt   *metav1.Time `json:"syncedAt,omitempty"`
	// Verified tells whether State comes from a successful read of the
	// container (exec), not from the pod's status alone (a container that
	// is not running, a pod that is terminating): only such a state proves
	// what the container sees now. Not part of the output.
	Verified bool `json:"-"`
	// StateFix is what fixes an unverifiable read (the read's hint: create
	// the reader namespace, grant exec...), "" when none is known; Warning
	// is the number of the warning that groups it with the other uses of
	// that one cause (GroupWarnings), 0 for none. Not part of the output:
	// the reason says both.
	StateFix string `json:"-"`
	Warning  int    `json:"-"`
}

// ObjectKey identifies a ConfigMap or Secret.
type ObjectKey struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// Key returns the ObjectKey of the item's object.
func (it Use) Key() ObjectKey {
	return ObjectKey{Kind: it.Object.Kind, Namespace: it.Object.Namespace, Name: it.Object.Name}
}

// NamesSecret reports whether any of keys is a Secret: then Secrets must be
// loaded even without --secrets.
func NamesSecret(keys []ObjectKey) bool {
	for _, k := range keys {
		if k.Kind == KindSecret {
			return true
		}
	}
	return false
}

// UseID is the stable identity of one use: which pod (by UID, so a
// replacement pod of the same name is another use), which container, how,
// where and of what. Two mounts of one ConfigMap in one container, or the
// same pod name in two namespaces, are different uses. It is carried from
// Uses through the refresh plan, apply and wait.
type UseID struct {
	Namespace  string `json:"namespace"`
	PodUID     string `json:"podUID,omitempty"`
	Pod        string `json:"pod"`
	Container  string `json:"container,omitempty"`
	Mode       Mode   `json:"mode,omitempty"`
	ObjectKind string `json:"objectKind"`
	ObjectName string `json:"objectName"`
	// Volume and MountPath for volume uses; Env for env (the variable) and
	// envFrom (the prefix) uses.
	Volume    string `json:"volume,omitempty"`
	MountPath string `json:"mountPath,omitempty"`
	Env       string `json:"env,omitempty"`
	// Source tells apart two sources of one projected volume that name
	// the same object (VolumeRef.Source).
	Source int `json:"source,omitempty"`
}

// ID returns the use's identity.
func (it Use) ID() UseID {
	id := UseID{
		Namespace: it.Object.Namespace, PodUID: it.Pod.UID, Pod: it.Pod.Name,
		Container: it.ContainerName(), Mode: it.Mode,
		ObjectKind: it.Object.Kind, ObjectName: it.Object.Name,
	}
	if it.Volume != nil {
		id.Volume, id.MountPath, id.Source = it.Volume.Name, it.Volume.MountPath, it.Volume.Source
	}
	switch it.Mode {
	case ModeEnv:
		id.Env = it.EnvName
	case ModeEnvFrom:
		id.Env = it.EnvPrefix
	}
	return id
}

// SamePod reports whether the use belongs to the pod with this identity
// (namespace, name and, when both are known, UID).
func (id UseID) SamePod(namespace, name, uid string) bool {
	return id.Namespace == namespace && id.Pod == name && (id.PodUID == "" || uid == "" || id.PodUID == uid)
}

// ContainerName returns the container name or "" for an unmounted volume.
func (it Use) ContainerName() string {
	if it.Container == nil {
		return ""
	}
	return it.Container.Name
}

// HotUpdating reports whether the use is a volume the kubelet rewrites.
func (m Mode) HotUpdating() bool {
	return m == ModeVolume || m == ModeItems || m == ModeProjected
}

// durationOf is a helper for building Delay values.
func durationOf(d time.Duration) metav1.Duration { return metav1.Duration{Duration: d} }

func timePtr(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t)
	return &mt
}

// ShortReason keeps the first words of a state reason, up to the first ':',
// ';' or '(' ("no shell", "not running"); a denial keeps the permission it
// lacks ("forbidden: create pods/exec"). Tables and the dashboard's status
// line show it; -o wide and JSON have the whole reason.
func ShortReason(s string) string {
	if rest, ok := strings.CutPrefix(s, "forbidden: "); ok {
		if i := strings.IndexAny(rest, ";("); i > 0 {
			rest = rest[:i]
		}
		return "forbidden: " + strings.TrimSpace(rest)
	}
	if i := strings.IndexAny(s, ":;("); i > 0 {
		return strings.TrimSpace(s[:i])
	}
	return s
}
