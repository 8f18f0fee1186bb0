package render

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// None is the cell of a value that is not there, as kubectl writes it.
const None = "<none>"

// StateTerminating is the STATE cell of a use whose pod is being deleted
// (its state is n/a: nothing is checked in it, its replacement is).
const StateTerminating = "terminating"

// phaseTerminating is inspect's PodRef.Phase of a pod with a
// deletionTimestamp, as kubectl shows it.
const phaseTerminating = "Terminating"

// Object is the object column: the name, secret/NAME for a Secret, with
// " (missing)" when it does not exist.
func Object(it inspect.Use) string {
	name := it.Object.Name
	if it.Object.Kind == inspect.KindSecret {
		name = "secret/" + name
	}
	if !it.Object.Exists {
		name += " (missing)"
	}
	return name
}

// Verdict tells an optional missing object or key (the pod runs without
// it, often by design) from a required one.
func Verdict(it inspect.Use) string {
	if it.Verdict == inspect.VerdictMissing && it.Optional {
		return "missing (optional)"
	}
	return string(it.Verdict)
}

// Container names the consuming container, with its type unless regular.
func Container(it inspect.Use) string {
	if it.Container == nil {
		return None
	}
	if it.Container.Type == inspect.ContainerRegular {
		return it.Container.Name
	}
	return fmt.Sprintf("%s (%s)", it.Container.Name, it.Container.Type)
}

// Mode is the use's mode.
func Mode(it inspect.Use) string { return OrNone(string(it.Mode)) }

// PathKeys says where and what a use reads: the mount path (with the
// subPath or keys), or the variable and key.
func PathKeys(it inspect.Use) string {
	keys := ""
	if len(it.Keys) > 0 {
		keys = " [" + strings.Join(it.Keys, ",") + "]"
	}
	switch it.Mode {
	case inspect.ModeVolume, inspect.ModeItems, inspect.ModeProjected:
		return it.Volume.MountPath + keys
	case inspect.ModeSubPath:
		return fmt.Sprintf("%s (subPath %s)", it.Volume.MountPath, it.Volume.SubPath)
	case inspect.ModeSubPathExpr:
		return fmt.Sprintf("%s (subPathExpr %s)", it.Volume.MountPath, it.Volume.SubPathExpr)
	case inspect.ModeEnv:
		return fmt.Sprintf("$%s <- %s", it.EnvName, strings.Join(it.Keys, ","))
	case inspect.ModeEnvFrom:
		if it.EnvPrefix != "" {
			return "$" + it.EnvPrefix + "* <- all keys"
		}
		return "all keys"
	case inspect.ModeUnmounted:
		return "volume " + it.Volume.Name + keys
	}
	return None
}

// Workload is kind/name of the pod's top-level owner, the kind qualified
// by its group for a controller that is not a built-in one
// (statefulset.apps.kruise.io/db).
func Workload(it inspect.Use) string {
	if it.Workload.Kind == "" {
		return None
	}
	return it.Workload.String()
}

// State is the STATE cell: the state; "terminating" for an n/a use of a
// pod being deleted; an unverifiable one with its short reason.
func State(it inspect.Use) string {
	switch {
	case it.State == "":
		return None
	case Terminating(it):
		return StateTerminating
	case it.State == inspect.StateUnverifiable && it.Warning > 0:
		return fmt.Sprintf("unverifiable: see warning %d", it.Warning)
	case it.State == inspect.StateUnverifiable && it.StateReason != "":
		return "unverifiable: " + inspect.ShortReason(it.StateReason)
	}
	return string(it.State)
}

// Terminating reports a use that is n/a because its pod is being deleted.
func Terminating(it inspect.Use) bool {
	return it.State == inspect.StateNA && it.Pod.Phase == phaseTerminating
}

// Synced is how long ago the kubelet last wrote the volume.
func Synced(it inspect.Use, now time.Time) string {
	if it.SyncedAt == nil {
		return None
	}
	return duration.HumanDuration(now.Sub(it.SyncedAt.Time)) + " ago"
}

// Reason is the reason of the use's state, else of its verdict.
func Reason(it inspect.Use) string {
	if it.StateReason != "" {
		return it.StateReason
	}
	return it.Reason
}

// OrNone is s, or <none> when it is empty.
func OrNone(s string) string {
	if s == "" {
		return None
	}
	return s
}

// YesNo is yes or no.
func YesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
