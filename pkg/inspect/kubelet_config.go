package inspect

// Reading a node's kubelet configuration (/configz through the API
// server's node proxy; needs get on nodes/proxy): the I/O edge is
// KubeletConfigReader, the parsing and the per-node outcome are pure.

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"k8s.io/client-go/kubernetes"
)

// KubeletConfigReader reads the raw /configz document of one node.
type KubeletConfigReader interface {
	Configz(ctx context.Context, node string) ([]byte, error)
}

// ClientKubeletConfig reads /api/v1/nodes/NODE/proxy/configz with client-go.
type ClientKubeletConfig struct{ Client kubernetes.Interface }

// Configz implements KubeletConfigReader. The error is the API server's
// Status (a 403 is apierrors.IsForbidden).
func (c ClientKubeletConfig) Configz(ctx context.Context, node string) ([]byte, error) {
	res := c.Client.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", node, "proxy", "configz").Do(ctx)
	raw, err := res.Raw()
	if err != nil {
		// Result.Error reads the API server's Status message, which Raw
		// leaves out ("unknown").
		return nil, res.Error()
	}
	return raw, nil
}

// KubeletDefaultsAssumed says what a node whose configuration was not
// read is predicted with.
const KubeletDefaultsAssumed = "the kubelet defaults: syncFrequency 1m, the Watch strategy, the feature gates of its version"

// ParseConfigz reads what the predictions use of a /configz document:
// syncFrequency, configMapAndSecretChangeDetectionStrategy (Watch when
// unset, the kubelet's default) and the feature gates it sets.
func ParseConfigz(raw []byte) (KubeletTiming, error) {
	var cz struct {
		KubeletConfig *struct {
			SyncFrequency string          `json:"syncFrequency"`
			Strategy      string          `json:"configMapAndSecretChangeDetectionStrategy"`
			FeatureGates  map[string]bool `json:"featureGates"`
		} `json:"kubeletconfig"`
	}
	if err := json.Unmarshal(raw, &cz); err != nil {
		return KubeletTiming{}, err
	}
	if cz.KubeletConfig == nil {
		return KubeletTiming{}, fmt.Errorf("no kubeletconfig in the document")
	}
	kc := cz.KubeletConfig
	t := KubeletTiming{Strategy: kc.Strategy, FeatureGates: kc.FeatureGates}
	if d, err := time.ParseDuration(kc.SyncFrequency); err == nil {
		t.SyncFrequency = d
	}
	if t.Strategy == "" {
		t.Strategy = StrategyWatch
	}
	return t, nil
}

// ReadKubeletConfigs reads the configuration of each node once. A node
// that cannot be read (403 without nodes/proxy, an unreachable kubelet, a
// document that does not parse) is left out with its error: the defaults
// apply to it (KubeletDefaultsAssumed).
func ReadKubeletConfigs(ctx context.Context, r KubeletConfigReader, nodes []string) (map[string]KubeletTiming, map[string]error) {
	out := map[string]KubeletTiming{}
	errs := map[string]error{}
	for _, n := range nodes {
		if _, done := out[n]; done || errs[n] != nil || n == "" {
			continue
		}
		raw, err := r.Configz(ctx, n)
		if err == nil {
			var t KubeletTiming
			if t, err = ParseConfigz(raw); err == nil {
				out[n] = t
				continue
			}
			err = fmt.Errorf("unreadable /configz: %w", err)
		}
		errs[n] = err
	}
	return out, errs
}
