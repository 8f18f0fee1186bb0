// Package alert tells a chat or a webhook what the continuous refresh
// did: one message per round (reconcile.Round) that acted or failed,
// formatted for Slack, Microsoft Teams, Google Chat or as the raw JSON
// round, and posted asynchronously (Sender) so that the loop never waits
// for it. Formatting is pure; the one I/O is the HTTP POST.
package alert

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/text"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/reconcile"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/render"
)

// Format is how a message is encoded for its receiver.
type Format string

const (
	// FormatRaw is the JSON document of the round (Document).
	FormatRaw Format = "raw"
	// FormatSlack is a Slack incoming webhook's {"text": ...}.
	FormatSlack Format = "slack"
	// FormatTeams is an Adaptive Card in a message, which Teams incoming
	// webhooks and Workflows' "when a webhook request is received" accept.
	FormatTeams Format = "teams"
	// FormatGChat is a Google Chat incoming webhook's {"text": ...}.
	FormatGChat Format = "gchat"
)

// Formats are the formats, in the order the flag's help names them.
var Formats = []Format{FormatSlack, FormatTeams, FormatGChat, FormatRaw}

// DocumentKind and DocumentVersion name the raw document.
const (
	DocumentVersion = "cmsync.kubectl-cmsync.io/v1alpha1"
	DocumentKind    = "Round"
)

// Bounds of a chat message: a round that restarts many workloads still
// fits the receivers' limits (Slack's 40,000 characters, Teams' 28 KB).
const (
	maxLines     = 40
	maxLineBytes = 400
)

// Document is the raw message: the round's events as `watch -o json`
// prints them, an action's consumers left out (its pods name them).
type Document struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Info is the fixed text of --alert-info (a cluster's name).
	Info      string            `json:"info,omitempty"`
	Namespace string            `json:"namespace"`
	Started   time.Time         `json:"started"`
	Ended     time.Time         `json:"ended"`
	Summary   string            `json:"summary"`
	Events    []reconcile.Event `json:"events"`
}

// Worth tells whether a round is worth a message: it sent or held an
// action, or something failed. A round of ignored changes or skipped
// workloads alone did nothing.
func Worth(r reconcile.Round) bool {
	return slices.ContainsFunc(r.Events, func(e reconcile.Event) bool {
		switch e.Kind {
		case reconcile.EventResult:
			return e.Action == nil || e.Action.Action != refresh.ActionNone // a consumer already current: nothing was done
		case reconcile.EventAction, reconcile.EventDeferred, reconcile.EventRetry, reconcile.EventError:
			return true
		}
		return false
	})
}

// Summary is the round in one line: the namespace, the objects changed,
// the actions sent and how they ended, the held and failed ones.
func Summary(r reconcile.Round) string {
	var objects []string
	actions, outcomes := map[string]int{}, map[string]int{}
	counts := map[reconcile.EventKind]int{}
	for _, e := range r.Events {
		counts[e.Kind]++
		switch e.Kind {
		case reconcile.EventChange:
			objects = append(objects, strings.ToLower(e.Object.Kind)+"/"+e.Object.Name)
		case reconcile.EventAction:
			actions[string(e.Action.Action)]++
		case reconcile.EventResult:
			outcomes[string(e.Outcome)]++
		}
	}
	parts := []string{"namespace " + r.Namespace}
	if len(objects) > 0 {
		parts = append(parts, "changed "+strings.Join(objects, ", "))
	}
	if len(actions) > 0 {
		parts = append(parts, counted(actions))
	}
	if len(outcomes) > 0 {
		parts = append(parts, "results: "+counted(outcomes))
	}
	for _, k := range []reconcile.EventKind{reconcile.EventDeferred, reconcile.EventRetry, reconcile.EventError} {
		if n := counts[k]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, k))
		}
	}
	return text.Printable(strings.Join(parts, "; "))
}

// counted is "2 annotate, 1 restart", in name order.
func counted(m map[string]int) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, fmt.Sprintf("%d %s", m[k], k))
	}
	return strings.Join(out, ", ")
}

// Lines are the round's events as `watch` prints them, without the time:
// "KIND SUBJECT: MESSAGE", at most maxLines of at most maxLineBytes, the
// last one saying how many were left out.
func Lines(r reconcile.Round) []string {
	var out []string
	for i, e := range r.Events {
		if len(out) == maxLines-1 && len(r.Events)-i > 1 {
			out = append(out, fmt.Sprintf("... and %d more events (the log has them all)", len(r.Events)-i))
			break
		}
		out = append(out, text.TruncateBytes(string(e.Kind)+" "+render.EventText(e), maxLineBytes-len("..."), "..."))
	}
	return out
}

// Payload is the body to POST for a round in format f, info the fixed
// text to add ("" for none). Every text of the message (the summary, the
// lines, info) quotes the cluster: names, annotation values, containers'
// and hooks' answers. Each is escaped for f's markup here, by escape, and
// only then given the format's own markup (the bold title).
func Payload(f Format, r reconcile.Round, info string) ([]byte, error) {
	title := "kubectl-cmsync: " + Summary(r)
	if info != "" {
		title = "[" + text.Printable(info) + "] " + title
	}
	lines := Lines(r)
	esc := func(s string) string { return escape(f, s) }
	title = esc(title)
	for i, l := range lines {
		lines[i] = esc(l)
	}
	switch f {
	case FormatSlack, FormatGChat:
		return json.Marshal(map[string]string{"text": "*" + title + "*\n" + strings.Join(lines, "\n")})
	case FormatTeams:
		return json.Marshal(teamsCard(title, lines))
	case FormatRaw:
		return json.Marshal(document(r, info))
	}
	return nil, fmt.Errorf("unknown alert format %q", f)
}

// escapers make a text plain in each chat's markup:
//   - Slack's mrkdwn and Google Chat's text read "<...>" as a link
//     (<https://x|text>, a disguised one) or a mention (<!channel>,
//     <users/all>): "&", "<" and ">" become entities, which both show as
//     the characters. Their emphasis marks (* _ ~ `) have no escape and
//     only style text.
//   - Teams' Adaptive Card TextBlocks read a CommonMark subset
//     ([text](url) links, <url> autolinks, emphasis, &entities;): the
//     marks that open them get CommonMark's backslash escape (a link needs
//     its "[", so parentheses stay as they are).
//
// The raw format is JSON, with no markup: nothing to escape.
var escapers = map[Format]*strings.Replacer{
	FormatSlack: strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;"),
	FormatGChat: strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;"),
	FormatTeams: strings.NewReplacer(`\`, `\\`, "[", `\[`, "]", `\]`, "<", `\<`, ">", `\>`, "&", `\&`, "*", `\*`, "_", `\_`, "`", "\\`", "~", `\~`),
}

// escape is s as plain text in format f's markup: the one place any text
// of a message is escaped.
func escape(f Format, s string) string {
	if e := escapers[f]; e != nil {
		return e.Replace(s)
	}
	return s
}

// teamsCard is an Adaptive Card (1.4) in a message with one attachment:
// the title in bold, then one text block per line.
func teamsCard(title string, lines []string) map[string]any {
	body := []map[string]any{{"type": "TextBlock", "text": title, "weight": "Bolder", "wrap": true}}
	for _, l := range lines {
		body = append(body, map[string]any{"type": "TextBlock", "text": l, "wrap": true, "spacing": "None"})
	}
	return map[string]any{
		"type": "message",
		"attachments": []map[string]any{{
			"contentType": "application/vnd.microsoft.card.adaptive",
			"content": map[string]any{
				"$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
				"type":    "AdaptiveCard", "version": "1.4", "body": body,
			},
		}},
	}
}

// document is the raw message of a round.
func document(r reconcile.Round, info string) Document {
	evs := make([]reconcile.Event, len(r.Events))
	for i, e := range r.Events {
		if e.Action != nil {
			a := *e.Action
			a.Consumers = nil
			e.Action = &a
		}
		evs[i] = e
	}
	return Document{APIVersion: DocumentVersion, Kind: DocumentKind, Info: info, Namespace: r.Namespace,
		Started: r.Started.UTC(), Ended: r.Ended.UTC(), Summary: Summary(r), Events: evs}
}
