package inspect

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

type configzReader map[string][]byte

func (r configzReader) Configz(_ context.Context, node string) ([]byte, error) {
	if raw, ok := r[node]; ok {
		return raw, nil
	}
	return nil, apierrors.NewForbidden(schema.GroupResource{Resource: "nodes/proxy"}, node, errors.New("denied"))
}

// TestReadKubeletConfigsDegrades: a node's /configz gives its timing and
// explicit feature gates; a 403 or an unreadable document leaves the node
// out with its error (the defaults apply to it), and the feature decision
// then falls back to the node's version.
func TestReadKubeletConfigsDegrades(t *testing.T) {
	r := configzReader{
		// what the v1.37.2 kubelet of the e2e cluster answers, cut down
		"new":  []byte(`{"kubeletconfig":{"syncFrequency":"1m0s","configMapAndSecretChangeDetectionStrategy":"Watch","failCgroupV1":false}}`),
		"gate": []byte(`{"kubeletconfig":{"syncFrequency":"30s","configMapAndSecretChangeDetectionStrategy":"Get","featureGates":{"EnvFiles":false}}}`),
		"bad":  []byte(`not json`),
	}
	got, errs := ReadKubeletConfigs(context.Background(), r, []string{"new", "gate", "new", "denied", "bad", ""})
	want := map[string]KubeletTiming{
		"new":  {SyncFrequency: time.Minute, Strategy: StrategyWatch},
		"gate": {SyncFrequency: 30 * time.Second, Strategy: StrategyGet, FeatureGates: map[string]bool{"EnvFiles": false}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("configs %+v, want %+v", got, want)
	}
	if len(errs) != 2 || !apierrors.IsForbidden(errs["denied"]) || errs["bad"] == nil {
		t.Errorf("errors %v, want a 403 for denied and a parse error for bad", errs)
	}
	k := NodeKubelet{Node: "gate", Config: &KubeletTiming{FeatureGates: got["gate"].FeatureGates}}
	k.Version, k.VersionKnown = ParseKubeletVersion("v1.37.2")
	if fs := k.Feature(FeatureEnvFiles); fs.On {
		t.Errorf("EnvFiles on a v1.37.2 kubelet whose configuration turns it off: %+v", fs)
	}
	k.Config = nil
	if fs := k.Feature(FeatureEnvFiles); !fs.On {
		t.Errorf("EnvFiles on a v1.37.2 kubelet without configuration: %+v, want its default, on", fs)
	}
	if _, err := ParseConfigz([]byte(`{"other":{}}`)); err == nil {
		t.Error("a document without kubeletconfig parsed")
	}
}
