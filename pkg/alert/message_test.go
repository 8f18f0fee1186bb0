package alert

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/reconcile"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// sampleRound is a round of namespace shop: ConfigMap app and Secret db
// changed, deployment/web restarted and current, pod api-1 annotated and
// failed, ConfigMap other ignored.
func sampleRound() reconcile.Round {
	obj := func(kind, name string) *inspect.ObjectKey {
		return &inspect.ObjectKey{Kind: kind, Namespace: "shop", Name: name}
	}
	restart := refresh.Action{Action: refresh.ActionRestart, Target: refresh.Target{Kind: "Deployment", Namespace: "shop", Name: "web"},
		Reason: "env consumer is stale", Pods: []string{"web-1", "web-2"},
		Consumers: []refresh.Consumer{{Object: inspect.ObjectRef{Kind: "Secret", Name: "db"}, Pod: "web-1", Container: "app", Env: "PASSWORD"}}}
	annotate := refresh.Action{Action: refresh.ActionAnnotate, Target: refresh.Target{Kind: "Pod", Namespace: "shop", Name: "api-1"},
		Reason: "hot-updating mount", Pods: []string{"api-1"}}
	after := 4200 * time.Millisecond
	return reconcile.Round{Namespace: "shop", Started: t0, Ended: t0.Add(5 * time.Second), Events: []reconcile.Event{
		{Time: t0, Kind: reconcile.EventChange, Object: obj("ConfigMap", "app"), Keys: []string{"a"}, Edits: 1, Message: "keys changed: a"},
		{Time: t0, Kind: reconcile.EventChange, Object: obj("Secret", "db"), Keys: []string{"password"}, Edits: 2, Message: "keys changed: password"},
		{Time: t0, Kind: reconcile.EventIgnored, Object: obj("ConfigMap", "other"), Message: "no pod consumes it"},
		{Time: t0, Kind: reconcile.EventAction, Action: &restart, Message: restart.Reason},
		{Time: t0, Kind: reconcile.EventAction, Action: &annotate, Message: annotate.Reason},
		{Time: t0, Kind: reconcile.EventResult, Action: &restart, Outcome: refresh.OutcomeCurrent, CurrentAfter: &after},
		{Time: t0, Kind: reconcile.EventResult, Action: &annotate, Outcome: refresh.OutcomeFailed, Message: "pods \"api-1\" is forbidden <x>"},
	}}
}

const sampleTitle = "[prod-eu] kubectl-cmsync: namespace shop; changed configmap/app, secret/db; 1 annotate, 1 restart; results: 1 current, 1 failed"

const sampleLines = `change configmap/app -n shop: keys changed: a
change secret/db -n shop: keys changed: password (2 edits)
ignored configmap/other -n shop: no pod consumes it
action restart deployment/web -n shop: env consumer is stale
action annotate pod/api-1 -n shop: hot-updating mount
result restart deployment/web -n shop: current after 4.2s
result annotate pod/api-1 -n shop: failed: pods "api-1" is forbidden <x>`

func TestPayloadChatFormats(t *testing.T) {
	for _, tc := range []struct {
		format Format
		want   string
	}{
		{FormatSlack, "*" + sampleTitle + "*\n" + strings.ReplaceAll(strings.ReplaceAll(sampleLines, "<", "&lt;"), ">", "&gt;")},
		{FormatGChat, "*" + sampleTitle + "*\n" + strings.ReplaceAll(strings.ReplaceAll(sampleLines, "<", "&lt;"), ">", "&gt;")},
	} {
		t.Run(string(tc.format), func(t *testing.T) {
			b, err := Payload(tc.format, sampleRound(), "prod-eu")
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]string
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatalf("not JSON: %v: %s", err, b)
			}
			if len(got) != 1 || got["text"] != tc.want {
				t.Errorf("payload %s\nwant text:\n%s", b, tc.want)
			}
		})
	}
}

func TestPayloadTeamsIsAnAdaptiveCard(t *testing.T) {
	b, err := Payload(FormatTeams, sampleRound(), "prod-eu")
	if err != nil {
		t.Fatal(err)
	}
	var msg struct {
		Type        string `json:"type"`
		Attachments []struct {
			ContentType string `json:"contentType"`
			Content     struct {
				Type    string `json:"type"`
				Version string `json:"version"`
				Body    []struct {
					Type   string `json:"type"`
					Text   string `json:"text"`
					Weight string `json:"weight"`
					Wrap   bool   `json:"wrap"`
				} `json:"body"`
			} `json:"content"`
		} `json:"attachments"`
	}
	if err := json.Unmarshal(b, &msg); err != nil {
		t.Fatal(err)
	}
	if msg.Type != "message" || len(msg.Attachments) != 1 || msg.Attachments[0].ContentType != "application/vnd.microsoft.card.adaptive" {
		t.Fatalf("not a message with one Adaptive Card: %s", b)
	}
	c := msg.Attachments[0].Content
	if c.Type != "AdaptiveCard" || c.Version != "1.4" {
		t.Errorf("content %s %s, want AdaptiveCard 1.4", c.Type, c.Version)
	}
	var texts []string
	for _, el := range c.Body {
		if el.Type != "TextBlock" || !el.Wrap {
			t.Errorf("element %+v is not a wrapping TextBlock", el)
		}
		texts = append(texts, el.Text)
	}
	teams := strings.NewReplacer("[", `\[`, "]", `\]`, "<", `\<`, ">", `\>`)
	if want := teams.Replace(sampleTitle + "\n" + sampleLines); strings.Join(texts, "\n") != want || c.Body[0].Weight != "Bolder" {
		t.Errorf("blocks:\n%s\nwant (the first Bolder):\n%s", strings.Join(texts, "\n"), want)
	}
}

func TestPayloadRawIsTheRound(t *testing.T) {
	b, err := Payload(FormatRaw, sampleRound(), "")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	evs, _ := doc["events"].([]any)
	if doc["apiVersion"] != DocumentVersion || doc["kind"] != "Round" || doc["namespace"] != "shop" || doc["info"] != nil ||
		doc["started"] != "2026-01-02T03:04:05Z" || doc["ended"] != "2026-01-02T03:04:10Z" || len(evs) != 7 {
		t.Fatalf("document %s", b)
	}
	if !strings.HasPrefix(fmt.Sprint(doc["summary"]), "namespace shop; changed configmap/app, secret/db") {
		t.Errorf("summary %q", doc["summary"])
	}
	restart := evs[3].(map[string]any)["action"].(map[string]any)
	if restart["consumers"] != nil || fmt.Sprint(restart["pods"]) != "[web-1 web-2]" || restart["action"] != "restart" {
		t.Errorf("action %v: want its pods, not its consumers", restart)
	}
	if res := evs[5].(map[string]any); res["event"] != "result" || res["outcome"] != "current" || res["currentAfterNs"] != float64(4200*time.Millisecond) {
		t.Errorf("result %v", res)
	}
	if r := sampleRound(); len(r.Events[3].Action.Consumers) != 1 {
		t.Error("the document changed the round's own action")
	}
}

func TestWorth(t *testing.T) {
	ev := func(k reconcile.EventKind) reconcile.Event { return reconcile.Event{Kind: k} }
	for _, tc := range []struct {
		kinds []reconcile.EventKind
		want  bool
	}{
		{nil, false},
		{[]reconcile.EventKind{reconcile.EventChange, reconcile.EventIgnored}, false},
		{[]reconcile.EventKind{reconcile.EventChange, reconcile.EventSkip}, false},
		{[]reconcile.EventKind{reconcile.EventChange, reconcile.EventAction}, true},
		{[]reconcile.EventKind{reconcile.EventChange, reconcile.EventDeferred}, true},
		{[]reconcile.EventKind{reconcile.EventRetry}, true},
		{[]reconcile.EventKind{reconcile.EventChange, reconcile.EventError}, true},
	} {
		var r reconcile.Round
		for _, k := range tc.kinds {
			r.Events = append(r.Events, ev(k))
		}
		if got := Worth(r); got != tc.want {
			t.Errorf("Worth(%v) = %v, want %v", tc.kinds, got, tc.want)
		}
	}
	// a change whose consumers were already current: its result says so,
	// and nothing was done that a message should tell
	current := reconcile.Round{Events: []reconcile.Event{ev(reconcile.EventChange),
		{Kind: reconcile.EventResult, Action: &refresh.Action{Action: refresh.ActionNone}, Outcome: refresh.OutcomeCurrent}}}
	if Worth(current) {
		t.Error("Worth of a round whose only result is for consumers already current = true, want false")
	}
}

// TestLinesAreBounded: a round of many events is at most maxLines lines,
// the last saying how many were left out, each line at most maxLineBytes.
func TestLinesAreBounded(t *testing.T) {
	var r reconcile.Round
	for i := range 100 {
		r.Events = append(r.Events, reconcile.Event{Kind: reconcile.EventError,
			Object: &inspect.ObjectKey{Kind: "ConfigMap", Namespace: "ns", Name: fmt.Sprintf("cm-%d", i)}, Message: strings.Repeat("x", 1000)})
	}
	lines := Lines(r)
	if len(lines) != maxLines || lines[maxLines-1] != "... and 61 more events (the log has them all)" {
		t.Fatalf("%d lines, the last %q", len(lines), lines[len(lines)-1])
	}
	for _, l := range lines {
		if len(l) > maxLineBytes {
			t.Fatalf("line of %d bytes", len(l))
		}
	}
	r.Events = r.Events[:maxLines]
	if lines := Lines(r); len(lines) != maxLines || strings.HasPrefix(lines[maxLines-1], "...") {
		t.Errorf("exactly maxLines events: %d lines, the last %q", len(lines), lines[len(lines)-1])
	}
}

func TestAlerterSendsRoundsWorthIt(t *testing.T) {
	var sent [][]byte
	a := &Alerter{Format: FormatGChat, Send: func(b []byte) { sent = append(sent, b) }}
	a.Round(reconcile.Round{Namespace: "ns", Events: []reconcile.Event{{Kind: reconcile.EventIgnored}}})
	a.Round(sampleRound())
	if len(sent) != 1 || !strings.Contains(string(sent[0]), "namespace shop") {
		t.Errorf("sent %q, want the one round that acted", sent)
	}
}

// hostile is text a namespace's user controls (an annotation's value, a
// hook's answer, a name), written to mention everyone and to disguise a
// link in each chat's markup.
const hostile = "<users/all> <https://example.invalid/login|Re-authenticate> [x](https://evil) <!channel> *b* _i_ `c` ~s~ \\ &amp;"

// hostileRound quotes hostile in an object's name, a change message (an
// invalid annotation value), a workload's name and a hook's answer.
func hostileRound() reconcile.Round {
	a := refresh.Action{Action: refresh.ActionAnnotate, Target: refresh.Target{Kind: "Pod", Namespace: "shop", Name: "api-1" + hostile}, Reason: "hot-updating mount"}
	return reconcile.Round{Namespace: "shop", Started: t0, Ended: t0, Events: []reconcile.Event{
		{Time: t0, Kind: reconcile.EventChange, Object: &inspect.ObjectKey{Kind: "ConfigMap", Namespace: "shop", Name: "app" + hostile}, Message: "keys changed: a"},
		{Time: t0, Kind: reconcile.EventError, Object: &inspect.ObjectKey{Kind: "ConfigMap", Namespace: "shop", Name: "app"},
			Message: `kubectl-cmsync.io/restart-window "` + hostile + `": not a window`},
		{Time: t0, Kind: reconcile.EventAction, Action: &a, Message: a.Reason},
		{Time: t0, Kind: reconcile.EventResult, Action: &a, Outcome: refresh.OutcomeFailed, Message: "HTTP 500: " + hostile},
	}}
}

// TestPayloadEscapesClusterText: in every format, text from the cluster
// reaches the reader as plain text: no mention, no link, no style of its
// own; each chat's text, unescaped by that chat's rules, is exactly the
// lines of the round, and cmsync's own markup (the bold title) stays.
func TestPayloadEscapesClusterText(t *testing.T) {
	r := hostileRound()
	plain := append([]string{"[<users/all>] kubectl-cmsync: " + Summary(r)}, Lines(r)...)
	html := strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&")
	markdown := regexp.MustCompile(`\\([[:punct:]])`)
	for _, f := range []Format{FormatSlack, FormatGChat, FormatTeams} {
		t.Run(string(f), func(t *testing.T) {
			b, err := Payload(f, r, "<users/all>")
			if err != nil {
				t.Fatal(err)
			}
			var texts []string
			if f == FormatTeams {
				var msg struct {
					Attachments []struct {
						Content struct {
							Body []struct{ Text, Weight string }
						}
					}
				}
				if err := json.Unmarshal(b, &msg); err != nil {
					t.Fatal(err)
				}
				for _, el := range msg.Attachments[0].Content.Body {
					texts = append(texts, el.Text)
				}
				if msg.Attachments[0].Content.Body[0].Weight != "Bolder" {
					t.Errorf("the title is not bold: %s", b)
				}
			} else {
				var msg map[string]string
				if err := json.Unmarshal(b, &msg); err != nil {
					t.Fatal(err)
				}
				title, rest, _ := strings.Cut(msg["text"], "\n")
				if !strings.HasPrefix(title, "*") || !strings.HasSuffix(title, "*") {
					t.Errorf("the title is not bold: %q", title)
				}
				texts = append([]string{strings.Trim(title, "*")}, strings.Split(rest, "\n")...)
			}
			all := strings.Join(texts, "\n")
			if f == FormatTeams {
				all = markdown.ReplaceAllString(all, "\x00") // an escaped mark is a plain character
			}
			for _, bad := range []string{"<users/all>", "<https://", "<!channel>", "[x](https://evil)", "*b*", "_i_", "`c`", "~s~"} {
				if f != FormatTeams && !strings.HasPrefix(bad, "<") {
					// not a link in Slack's or Google Chat's text syntax; a style
					// only, which neither has an escape for (docs/controller.md)
					continue
				}
				if strings.Contains(all, bad) {
					t.Errorf("%s carries %q as markup:\n%s", f, bad, all)
				}
			}
			for i, s := range texts {
				if f == FormatTeams {
					s = markdown.ReplaceAllString(s, "$1")
				} else {
					s = html.Replace(s)
				}
				if i >= len(plain) || s != plain[i] {
					t.Errorf("%s block %d unescaped: %q\nwant %q", f, i, s, plain[min(i, len(plain)-1)])
				}
			}
		})
	}
	b, err := Payload(FormatRaw, r, "")
	if err != nil {
		t.Fatal(err)
	}
	var doc Document
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if got := doc.Events[3].Message; got != "HTTP 500: "+hostile {
		t.Errorf("raw: the hook's answer %q, want it as it was (JSON has no markup)", got)
	}
}
