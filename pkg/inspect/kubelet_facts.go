package inspect

// What the kubelet does with ConfigMaps and Secrets that this package
// relies on: the names its atomic writer gives the data directories (when
// it last wrote a volume) and how long it takes to apply a change (its
// defaults, the node's TTL annotation, the estimate and its wording).

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Kubelet defaults (KubeletConfiguration v1beta1).
const (
	DefaultSyncFrequency = time.Minute
	// syncJitter is the jitter factor of the pod worker's periodic resync.
	syncJitter = 0.5
	// DefaultCacheTTL is the Cache strategy's TTL when the node has no
	// node.alpha.kubernetes.io/ttl annotation.
	DefaultCacheTTL = time.Minute
	// NodeTTLAnnotation is set by the TTL controller.
	NodeTTLAnnotation = "node.alpha.kubernetes.io/ttl"
)

// Change-detection strategies of the kubelet.
const (
	StrategyWatch = "Watch"
	StrategyCache = "Cache"
	StrategyGet   = "Get"
)

// KubeletTiming is what the kubelet's /configz says about update timing
// and the feature gates it sets explicitly.
type KubeletTiming struct {
	SyncFrequency time.Duration
	Strategy      string
	// FeatureGates are the gates the configuration sets (nil: none, every
	// gate at its default for the kubelet's version).
	FeatureGates map[string]bool
}

// EstimateDelay returns how long a hot-updating use on node may take to see
// a change: the periodic resync (syncFrequency, plus 50% jitter, and the edit
// can land at any moment of it) plus the cache delay of the change-detection
// strategy. Without kubelet configuration the defaults (1m, Watch) apply;
// with a readable node its TTL annotation bounds a Cache strategy.
func EstimateDelay(node string, snap *Snapshot) Delay {
	sync := DefaultSyncFrequency
	ttl, hasTTL := nodeTTL(node, snap)
	if kc, ok := snap.KubeletConfigs[node]; ok {
		if kc.SyncFrequency > 0 {
			sync = kc.SyncFrequency
		}
		cache := time.Duration(0)
		if kc.Strategy == StrategyCache {
			cache = DefaultCacheTTL
			if hasTTL {
				cache = ttl
			}
		}
		return Delay{Min: durationOf(0), Max: durationOf(maxResync(sync) + cache), Basis: BasisKubeletConfig}
	}
	if hasTTL {
		// The strategy is unknown: Watch adds nothing; Cache adds up to the
		// TTL. A node without the annotation tells nothing: the defaults.
		return Delay{Min: durationOf(0), Max: durationOf(maxResync(sync) + ttl), Basis: BasisNodeTTL}
	}
	return Delay{Min: durationOf(0), Max: durationOf(maxResync(sync)), Basis: BasisDefault}
}

// maxResync is the longest time between two periodic syncs of a pod.
func maxResync(sync time.Duration) time.Duration {
	return time.Duration(float64(sync) * (1 + syncJitter))
}

// nodeTTL reads the node's TTL annotation; false when the node or a valid
// annotation is unknown.
func nodeTTL(node string, snap *Snapshot) (time.Duration, bool) {
	n, ok := snap.Nodes[node]
	if !ok || n == nil {
		return 0, false
	}
	v, ok := n.Annotations[NodeTTLAnnotation]
	if !ok {
		return 0, false
	}
	s, err := strconv.Atoi(v)
	if err != nil || s < 0 {
		return 0, false
	}
	return time.Duration(s) * time.Second, true
}

// formatDelay renders a delay as "0-90s".
func formatDelay(d Delay) string {
	return fmt.Sprintf("%s-%s", shortDuration(d.Min.Duration), shortDuration(d.Max.Duration))
}

// FormatDelay renders a delay estimate for tables: "0-90s".
func FormatDelay(d *Delay) string {
	if d == nil {
		return ""
	}
	return formatDelay(*d)
}

func shortDuration(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return d.String()
}

func basisText(b DelayBasis) string {
	switch b {
	case BasisKubeletConfig:
		return "the node's kubelet configuration"
	case BasisNodeTTL:
		return "pod resync 60-90s, plus the node's cache TTL if the kubelet uses the Cache strategy"
	}
	return "kubelet defaults assumed: pod resync 60s + 50% jitter, Watch strategy"
}

// pendingTiming says how long ago the object changed against the delay
// estimate.
func pendingTiming(it Use, obj Object, now time.Time) string {
	d := useDelay(it)
	kind := strings.ToLower(it.Object.Kind)
	last := useLastChange(it, obj)
	if last.IsZero() {
		return fmt.Sprintf("the kubelet applies changes within %s", formatDelay(d))
	}
	since := now.Sub(last)
	if since < 0 {
		since = 0
	}
	ago := since.Truncate(time.Second).String()
	if since > d.Max.Duration {
		return fmt.Sprintf("the %s changed %s ago, longer than the %s the kubelet should take: it may be failing to sync this pod (see the pod's events); a pod annotation (refresh) makes it re-sync now",
			kind, ago, formatDelay(d))
	}
	return fmt.Sprintf("the %s changed %s ago and the kubelet applies changes within %s", kind, ago, formatDelay(d))
}

// useDelay is the delay the kubelet takes to write a change of the use's
// object into its volume (the default when unknown).
func useDelay(it Use) Delay {
	if it.Delay != nil {
		return *it.Delay
	}
	return Delay{Min: durationOf(0), Max: durationOf(maxResync(DefaultSyncFrequency)), Basis: BasisDefault}
}

// useLastChange is when the use's object last changed, zero when unknown.
func useLastChange(it Use, obj Object) time.Time {
	if obj.LastChange.IsZero() && it.Object.LastChange != nil {
		return it.Object.LastChange.Time
	}
	return obj.LastChange
}

// overdue tells whether the object changed longer ago than the kubelet
// takes to write a change (false when unknown).
func overdue(it Use, obj Object, now time.Time) bool {
	last := useLastChange(it, obj)
	return !last.IsZero() && now.Sub(last) > useDelay(it).Max.Duration
}
