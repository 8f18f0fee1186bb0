package render

import (
	"testing"
	"time"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/reconcile"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

func TestEventLine(t *testing.T) {
	at := time.Date(2026, 11, 25, 17, 30, 1, 0, time.UTC)
	app := inspect.ObjectKey{Kind: inspect.KindConfigMap, Namespace: "demo", Name: "app"}
	web := refresh.Action{Action: refresh.ActionAnnotate, Target: refresh.Target{Kind: "Pod", Namespace: "demo", Name: "web"}}
	after, since := 800*time.Millisecond, 2930*time.Millisecond
	cases := []struct {
		e    reconcile.Event
		want string
	}{
		{reconcile.Event{Time: at, Kind: reconcile.EventChange, Object: &app, Edits: 3, Message: "keys changed: greeting"},
			"2026-11-25T17:30:01Z change   configmap/app -n demo: keys changed: greeting (3 edits)"},
		{reconcile.Event{Time: at, Kind: reconcile.EventResult, Action: &web, Outcome: refresh.OutcomeCurrent, CurrentAfter: &after, SinceChange: &since},
			"2026-11-25T17:30:01Z result   annotate pod/web -n demo: current after 800ms (2.9s after the first edit)"},
		{reconcile.Event{Time: at, Kind: reconcile.EventSkip, Object: &app, Target: &refresh.Target{Kind: "Deployment", Namespace: "demo", Name: "api"}, Message: "paused"},
			"2026-11-25T17:30:01Z skip     deployment/api -n demo for configmap/app: paused"},
		{reconcile.Event{Time: at, Kind: reconcile.EventReady, Message: "watching\x1b[2J"},
			`2026-11-25T17:30:01Z ready    watching\x1b[2J`},
	}
	for _, tc := range cases {
		if got := Event(tc.e); got != tc.want {
			t.Errorf("Event:\n got %q\nwant %q", got, tc.want)
		}
	}
}
