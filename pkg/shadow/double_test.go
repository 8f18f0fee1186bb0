package shadow

import (
	"strings"
	"testing"
	"time"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/reconcile"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

func TestDoubles(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 10, 0, 0, 0, time.UTC)
	app := Workload{Kind: "Deployment", Namespace: "shop", Name: "app"}
	other := Workload{Kind: "Deployment", Namespace: "shop", Name: "other"}
	envMarker := func(w Workload, at time.Time) Marker {
		return Marker{At: at, Workload: w, Strategy: StrategyEnvVars, Kind: "ConfigMap", EnvObject: "APP_CFG", Hash: "h"}
	}

	t.Run("the peer after cmsync", func(t *testing.T) {
		d := Doubles{Window: time.Minute}
		if got := d.Restarted(app, t0); len(got) != 0 {
			t.Fatalf("a restart alone: %v", got)
		}
		if got := d.Marked(envMarker(other, t0.Add(5*time.Second))); len(got) != 0 {
			t.Errorf("another workload's marker: %v", got)
		}
		if got := d.Marked(Marker{At: t0.Add(time.Second), Workload: app, Strategy: StrategyRestartedAt}); len(got) != 0 {
			t.Errorf("restartedAt (cmsync's own marker): %v", got)
		}
		got := d.Marked(envMarker(app, t0.Add(3*time.Second)))
		if len(got) != 1 || got[0].Workload != app || !got[0].Cmsync.Equal(t0) || got[0].Peer.Strategy != StrategyEnvVars {
			t.Fatalf("the peer's marker 3s after: %+v, want one double of app", got)
		}
		if got := d.Marked(envMarker(app, t0.Add(4*time.Second))); len(got) != 0 {
			t.Errorf("a second marker for the same restart: %v, want it reported once", got)
		}
	})

	t.Run("the peer before cmsync", func(t *testing.T) {
		d := Doubles{Window: time.Minute}
		ann := Marker{At: t0, Workload: app, Strategy: StrategyAnnotations, Kind: "Secret", Name: "db"}
		if got := d.Marked(ann); len(got) != 0 {
			t.Fatalf("a marker alone: %v", got)
		}
		got := d.Restarted(app, t0.Add(20*time.Second))
		if len(got) != 1 || got[0].Peer.Name != "db" {
			t.Fatalf("cmsync's restart 20s after the peer's: %+v, want one double", got)
		}
		msg := got[0].Message()
		for _, s := range []string{"deployment/app", "restarted twice", "annotations", "Secret/db", "20s before", "--shadow"} {
			if !strings.Contains(msg, s) {
				t.Errorf("message %q does not say %q", msg, s)
			}
		}
	})

	t.Run("outside the window", func(t *testing.T) {
		d := Doubles{Window: time.Minute}
		d.Restarted(app, t0)
		if got := d.Marked(envMarker(app, t0.Add(time.Minute+Slack+time.Second))); len(got) != 0 {
			t.Errorf("a marker past the window: %v", got)
		}
		if got := d.Restarted(app, t0.Add(5*time.Minute)); len(got) != 0 {
			t.Errorf("a restart long after the marker: %v", got)
		}
		if len(d.restarts) != 1 || len(d.markers) != 0 {
			t.Errorf("kept %d restarts and %d markers, want the old ones forgotten", len(d.restarts), len(d.markers))
		}
	})
}

func TestRestartOf(t *testing.T) {
	target := refresh.Target{Kind: "Deployment", Namespace: "shop", Name: "app"}
	for _, c := range []struct {
		e    reconcile.Event
		want bool
	}{
		{reconcile.Event{Kind: reconcile.EventAction, Action: &refresh.Action{Action: refresh.ActionRestart, Target: target}}, true},
		{reconcile.Event{Kind: reconcile.EventAction, Action: &refresh.Action{Action: refresh.ActionEvict, Target: target}}, true},
		{reconcile.Event{Kind: reconcile.EventAction, Action: &refresh.Action{Action: refresh.ActionAnnotate, Target: target}}, false},
		{reconcile.Event{Kind: reconcile.EventDeferred, Action: &refresh.Action{Action: refresh.ActionRestart, Target: target}}, false},
		{reconcile.Event{Kind: reconcile.EventResult, Action: &refresh.Action{Action: refresh.ActionRestart, Target: target}}, false},
	} {
		w, ok := RestartOf(c.e)
		if ok != c.want || ok && w != (Workload{Kind: "Deployment", Namespace: "shop", Name: "app"}) {
			t.Errorf("RestartOf(%s %s) = %v %v, want %v", c.e.Kind, c.e.Action.Action, w, ok, c.want)
		}
	}
	d := Double{Workload: Workload{Kind: "Deployment", Namespace: "shop", Name: "app"}}
	if e := d.Event(time.Now()); e.Kind != reconcile.EventError || e.Target == nil || e.Target.String() != "deployment/app" || !strings.Contains(e.Message, "--shadow") {
		t.Errorf("the double's event %+v, want an error on deployment/app naming --shadow", e)
	}
}

// The record's own ConfigMap opens no decision: each write of it would
// make a row, and that row another write.
func TestObserverSkipsItsRecord(t *testing.T) {
	o := &Observer{Record: Object{Kind: "ConfigMap", Namespace: "ops", Name: DefaultRecordName}}
	change := func(ns, name string) reconcile.Event {
		return reconcile.Event{Kind: reconcile.EventChange, Time: time.Now(), Object: &inspect.ObjectKey{Kind: "ConfigMap", Namespace: ns, Name: name}}
	}
	o.Handle(change("ops", DefaultRecordName))
	if len(o.collector.Open) != 0 {
		t.Errorf("the record's change opened %d decisions, want 0", len(o.collector.Open))
	}
	o.Handle(change("shop", DefaultRecordName))
	o.Handle(change("ops", "app"))
	if len(o.collector.Open) != 2 {
		t.Errorf("other changes opened %d decisions, want 2", len(o.collector.Open))
	}
}
