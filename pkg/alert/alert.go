package alert

import (
	"fmt"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/reconcile"
)

// EnvWebhook is the environment variable the webhook URL is read from
// when --alert-webhook is not given (so that a Deployment takes it from a
// Secret, never from its arguments).
const EnvWebhook = "CMSYNC_ALERT_WEBHOOK"

// EnvProxy is the environment variable the webhook's proxy URL is read
// from when --alert-proxy is not given: it may hold a password, so a
// Deployment takes it from a Secret too.
const EnvProxy = "CMSYNC_ALERT_PROXY"

// Alerter turns the loop's rounds into messages: its Round is the Loop's.
type Alerter struct {
	Format Format
	// Info is a fixed text added to every message (a cluster's name).
	Info string
	// Send queues a message's body (Sender.Send): it must not block.
	Send func([]byte)
	// Report is told a message that could not be made.
	Report func(string)
}

// Round sends one message for a round worth one (Worth).
func (a *Alerter) Round(r reconcile.Round) {
	if !Worth(r) {
		return
	}
	b, err := Payload(a.Format, r, a.Info)
	if err != nil {
		if a.Report != nil {
			a.Report(fmt.Sprintf("alert for namespace %s not sent: %v", r.Namespace, err))
		}
		return
	}
	a.Send(b)
}
