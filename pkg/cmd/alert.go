package cmd

import (
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/alert"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/reconcile"
)

// AlertFlags are the alert flags watch and controller share: one message
// per round that acted or failed, posted to a webhook (pkg/alert).
type AlertFlags struct {
	Webhook string
	Format  string
	Proxy   string
	Info    string
	// webhookFrom and proxyFrom name where Webhook and Proxy came from in
	// errors: the flag, or the environment variable (set by complete)
	webhookFrom, proxyFrom string
}

// alertFlushTimeout bounds how long a stopping command waits for the
// alerts still queued.
const alertFlushTimeout = 5 * time.Second

// maxAlertInfo bounds --alert-info: a cluster's name, not a document.
const maxAlertInfo = 200

func defaultAlertFlags() AlertFlags { return AlertFlags{Format: string(alert.FormatRaw)} }

func (f *AlertFlags) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.Webhook, "alert-webhook", f.Webhook, "Post one message per round that acted or failed to this webhook URL (default $"+alert.EnvWebhook+
		"). The URL is a credential: only its host is ever printed.")
	fs.StringVar(&f.Format, "alert-format", f.Format, "The message format of --alert-webhook: slack, teams (an Adaptive Card), gchat, or raw (the round as JSON).")
	fs.StringVar(&f.Proxy, "alert-proxy", f.Proxy, "The HTTP proxy of --alert-webhook's requests only (default $"+alert.EnvProxy+", else HTTPS_PROXY, HTTP_PROXY and NO_PROXY). It may hold a password: it is never printed.")
	fs.StringVar(&f.Info, "alert-info", f.Info, "A fixed text added to every alert, such as the cluster's name.")
}

// complete takes the webhook and the proxy from the environment when
// their flags are unset.
func (f *AlertFlags) complete() {
	f.webhookFrom, f.proxyFrom = fromEnv(&f.Webhook, "--alert-webhook", alert.EnvWebhook), fromEnv(&f.Proxy, "--alert-proxy", alert.EnvProxy)
}

// fromEnv sets *v from the environment variable env when it is empty, and
// names where it came from: flag, or $env.
func fromEnv(v *string, flag, env string) string {
	if *v == "" {
		if e := os.Getenv(env); e != "" {
			*v = e
			return "$" + env
		}
	}
	return flag
}

// validate checks the alert flags. Neither URL is ever quoted back: the
// webhook carries a token, a proxy URL may carry a password.
func (f *AlertFlags) validate() error {
	formats := make([]string, len(alert.Formats))
	for i, v := range alert.Formats {
		formats[i] = string(v)
	}
	if !slices.Contains(formats, f.Format) {
		return usageError("invalid --alert-format %q: must be one of %s", f.Format, strings.Join(formats, ", "))
	}
	proxyFrom := f.proxyFrom
	if proxyFrom == "" {
		proxyFrom = "--alert-proxy"
	}
	if f.Webhook == "" {
		for _, v := range []struct{ flag, value, unset string }{{proxyFrom, f.Proxy, ""}, {"--alert-info", f.Info, ""}, {"--alert-format", f.Format, string(alert.FormatRaw)}} {
			if v.value != v.unset {
				return usageError("%s needs --alert-webhook (or $%s)", v.flag, alert.EnvWebhook)
			}
		}
		return nil
	}
	from := f.webhookFrom
	if from == "" {
		from = "--alert-webhook"
	}
	if !webURL(f.Webhook, "http", "https") {
		return usageError("invalid %s: must be an absolute http or https URL with a host (the value is not shown: it may hold a token)", from)
	}
	if f.Proxy != "" && !webURL(f.Proxy, "http", "https", "socks5") {
		return usageError("invalid %s: must be an absolute http, https or socks5 URL with a host (the value is not shown: it may hold a password)", proxyFrom)
	}
	if len(f.Info) > maxAlertInfo {
		return usageError("--alert-info must be at most %d bytes, got %d", maxAlertInfo, len(f.Info))
	}
	return nil
}

// webURL tells whether s is an absolute URL of one of schemes, with a host.
func webURL(s string, schemes ...string) bool {
	u, err := url.Parse(s)
	return err == nil && slices.Contains(schemes, u.Scheme) && u.Host != "" && u.Hostname() != ""
}

// start starts the alerts when a webhook is set: the loops given to the
// function it returns get a Round that queues each round's message;
// report prints what goes wrong, observe counts each message's end (nil:
// not counted). stop flushes what is queued, within alertFlushTimeout.
func (f *AlertFlags) start(report func(string), observe func(format string, r alert.Result)) (attach func(*reconcile.Loop), stop func()) {
	if f.Webhook == "" {
		return func(*reconcile.Loop) {}, func() {}
	}
	webhook, _ := url.Parse(f.Webhook) // checked by validate
	cfg := alert.SenderConfig{URL: webhook, Report: report}
	if f.Proxy != "" {
		cfg.Proxy, _ = url.Parse(f.Proxy)
	}
	if observe != nil {
		cfg.Observe = func(r alert.Result) { observe(f.Format, r) }
	}
	s := alert.NewSender(cfg)
	a := &alert.Alerter{Format: alert.Format(f.Format), Info: f.Info, Send: s.Send, Report: report}
	return func(l *reconcile.Loop) { l.Round = a.Round }, func() { s.Close(alertFlushTimeout) }
}

// serialized makes emit safe to call from several goroutines (the loop's
// events and the alerts' reports share one output).
func serialized(emit func(reconcile.Event)) func(reconcile.Event) {
	var mu sync.Mutex
	return func(e reconcile.Event) {
		mu.Lock()
		defer mu.Unlock()
		emit(e)
	}
}

// alertReport is a report of the alerts as an error event of the log.
func alertReport(emit func(reconcile.Event)) func(string) {
	return func(msg string) {
		emit(reconcile.Event{Time: time.Now(), Kind: reconcile.EventError, Message: msg})
	}
}
