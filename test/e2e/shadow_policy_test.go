//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/reconcile"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/shadow"
)

// TestShadowReloaderOnChange: `watch --shadow` beside the stand-in for
// Reloader, which restarts a Deployment opted in through
// reloader.stakater.com/auto whose pods read the ConfigMap as a volume.
// Under the default (--reloader-on-change=restart) cmsync restarts it too
// (agree, no pod spared), and the report counts its 2 pods as spared by
// the remount policy and names it as one that policy would leave stale
// unless it re-reads its files; with --reloader-on-change=remount cmsync
// remounts it (spared).
func TestShadowReloaderOnChange(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		policy string
		class  shadow.Class
		spared int
	}{
		{reconcile.OnChangeRestart, shadow.ClassAgree, 0},
		{reconcile.OnChangeRemount, shadow.ClassSpared, 2},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			t.Parallel()
			f := newFx(t)
			f.createConfigMap(configMap("vol-cfg", map[string]string{"greeting": "v0"}))
			f.createAnnotatedDeployment("volapp", 2, withVolumes(podSpec(withMounts(busybox("c"), mount("v", "/etc/vol"))), cmVolume("v", "vol-cfg")),
				map[string]string{reconcile.ReloaderAuto: "true"})
			f.waitDeploymentSettled("volapp")
			window := 20 * time.Second
			w := f.startWatch("--shadow", "--shadow-window", window.String(), "--shadow-namespace", f.ns,
				"--debounce", "1s", "--max-wait", "5s", "--reloader-on-change="+tc.policy)
			f.patchConfigMapData("vol-cfg", map[string]string{"greeting": "v1"})
			f.reloadAnnotations("deployment/volapp", "ConfigMap", "vol-cfg") // the peer, at once

			var rep shadow.Report
			f.poll("the row in the shadow record", window+90*time.Second, func() (bool, error) {
				out, code := f.shadowReport("json")
				if code != 0 {
					return false, fmt.Errorf("shadow report: exit %d", code)
				}
				rep = shadow.Report{}
				if err := json.Unmarshal([]byte(out), &rep); err != nil {
					return false, err
				}
				return len(rep.Items) >= 1, nil
			})
			w.stop()
			b, _ := json.Marshal(rep)
			t.Logf("report: %s", b)
			if len(rep.Items) != 1 || len(rep.Items[0].Workloads) != 1 {
				t.Fatalf("%d rows, want 1 of one workload", len(rep.Items))
			}
			r, wr := rep.Items[0], rep.Items[0].Workloads[0]
			if r.Class != tc.class || wr.Peer != shadow.StrategyAnnotations || r.Spared != tc.spared {
				t.Errorf("class %q, peer %q, %d pods spared; want %q, annotations, %d", r.Class, wr.Peer, r.Spared, tc.class, tc.spared)
			}
			if r.SparedByRemount != 2 || rep.Summary.PodsSparedByRemount != 2 {
				t.Errorf("spared by the remount policy: row %d, summary %d; want 2 and 2", r.SparedByRemount, rep.Summary.PodsSparedByRemount)
			}
			stale := slices.Contains(rep.Summary.RemountLeavesStale, f.ns+"/deployment/volapp")
			switch tc.policy {
			case reconcile.OnChangeRestart:
				if (wr.Cmsync != shadow.ActRestart && wr.Cmsync != shadow.ActDeferred) || wr.RemountPolicy != shadow.ActRemount || wr.RemountClass != shadow.ClassSpared || !stale {
					t.Errorf("workload %+v, stale list %v: want a restart, remounted and spared by the remount policy, named stale", wr, rep.Summary.RemountLeavesStale)
				}
			default:
				if wr.Cmsync != shadow.ActRemount || wr.Remounted != 2 || wr.RemountPolicy != "" || stale {
					t.Errorf("workload %+v, stale list %v: want 2 pods remounted and no other policy to report", wr, rep.Summary.RemountLeavesStale)
				}
			}
			f.noCmsyncManager("deployment/volapp", f.getDeployment("volapp"))
		})
	}
}
