package cmd

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/alert"
)

const testWebhook = "https://hooks.slack.com/services/T000/B000/XXXXSECRET"

func TestAlertFlagsValidate(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  string
		want string
	}{
		{"unknown format", []string{"--alert-webhook", testWebhook, "--alert-format", "discord"},
			"", `invalid --alert-format "discord": must be one of slack, teams, gchat, raw`},
		{"not a URL", []string{"--alert-webhook", "hooks.slack.com/services/T000/B000/XXXXSECRET"},
			"", `invalid --alert-webhook: must be an absolute http or https URL with a host (the value is not shown: it may hold a token)`},
		{"another scheme", []string{"--alert-webhook", "ftp://hooks.example/XXXXSECRET"},
			"", `invalid --alert-webhook: must be an absolute http or https URL with a host (the value is not shown: it may hold a token)`},
		{"no host", []string{"--alert-webhook", "https:///XXXXSECRET"},
			"", `invalid --alert-webhook: must be an absolute http or https URL with a host (the value is not shown: it may hold a token)`},
		{"bad URL from the environment", nil,
			"hooks.slack.com/XXXXSECRET", `invalid $CMSYNC_ALERT_WEBHOOK: must be an absolute http or https URL with a host (the value is not shown: it may hold a token)`},
		{"bad proxy", []string{"--alert-webhook", testWebhook, "--alert-proxy", "user:XXXXSECRET@proxy:3128"},
			"", `invalid --alert-proxy: must be an absolute http, https or socks5 URL with a host (the value is not shown: it may hold a password)`},
		{"proxy without webhook", []string{"--alert-proxy", "http://proxy:3128"},
			"", `--alert-proxy needs --alert-webhook (or $CMSYNC_ALERT_WEBHOOK)`},
		{"info without webhook", []string{"--alert-info", "prod-eu"},
			"", `--alert-info needs --alert-webhook (or $CMSYNC_ALERT_WEBHOOK)`},
		{"format without webhook", []string{"--alert-format", "slack"},
			"", `--alert-format needs --alert-webhook (or $CMSYNC_ALERT_WEBHOOK)`},
		{"long info", []string{"--alert-webhook", testWebhook, "--alert-info", strings.Repeat("x", 201)},
			"", `--alert-info must be at most 200 bytes, got 201`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(alert.EnvWebhook, tt.env)
			err := parseAlertFlags(t, tt.args)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("Validate() = %v, want %q", err, tt.want)
			}
			if ExitCode(err) != ExitUsage {
				t.Errorf("exit code %d, want %d", ExitCode(err), ExitUsage)
			}
			if strings.Contains(err.Error(), "XXXXSECRET") {
				t.Errorf("the error quotes the URL: %v", err)
			}
		})
	}
	for _, ok := range []struct {
		args []string
		env  string
	}{
		{nil, ""},
		{[]string{"--alert-webhook", testWebhook, "--alert-format", "teams", "--alert-proxy", "http://proxy:3128", "--alert-info", "prod-eu"}, ""},
		{[]string{"--alert-format", "gchat"}, "https://chat.googleapis.com/v1/spaces/S/messages?key=K&token=T"},
	} {
		t.Setenv(alert.EnvWebhook, ok.env)
		if err := parseAlertFlags(t, ok.args); err != nil {
			t.Errorf("%q with $%s=%q: %v", ok.args, alert.EnvWebhook, ok.env, err)
		}
	}
}

// parseAlertFlags parses args as watch's flags, completes the alert flags
// and validates them.
func parseAlertFlags(t *testing.T, args []string) error {
	t.Helper()
	for _, controller := range []bool{false, true} {
		o := NewWatchOptions(genericclioptions.NewConfigFlags(false), genericiooptions.NewTestIOStreamsDiscard())
		cmd := &cobra.Command{}
		o.addFlags(cmd, controller)
		if err := cmd.ParseFlags(args); err != nil {
			t.Fatal(err)
		}
		o.Alert.complete()
		if err := o.Validate(); err != nil || controller {
			return err
		}
	}
	return nil
}

// TestWebhookFromTheEnvironment: the variable is used when the flag is
// unset, and the flag wins over it.
func TestWebhookFromTheEnvironment(t *testing.T) {
	t.Setenv(alert.EnvWebhook, testWebhook)
	f := defaultAlertFlags()
	f.complete()
	if f.Webhook != testWebhook {
		t.Errorf("webhook %q, want the environment's", f.Webhook)
	}
	f = AlertFlags{Webhook: "https://other.example/hook", Format: "raw"}
	f.complete()
	if f.Webhook != "https://other.example/hook" {
		t.Errorf("webhook %q, want the flag's", f.Webhook)
	}
}

// TestProxyFromTheEnvironment: the proxy URL (which may hold a password)
// comes from $CMSYNC_ALERT_PROXY when --alert-proxy is unset, so that a
// Deployment takes it from a Secret; the flag wins; a bad one from the
// environment is named as such and not quoted.
func TestProxyFromTheEnvironment(t *testing.T) {
	t.Setenv(alert.EnvWebhook, testWebhook)
	t.Setenv(alert.EnvProxy, "http://user:XXXXSECRET@proxy:3128")
	f := defaultAlertFlags()
	f.complete()
	if f.Proxy != "http://user:XXXXSECRET@proxy:3128" || f.validate() != nil {
		t.Errorf("proxy %q (%v), want the environment's", f.Proxy, f.validate())
	}
	f = AlertFlags{Proxy: "http://other:3128", Format: "raw"}
	f.complete()
	if f.Proxy != "http://other:3128" {
		t.Errorf("proxy %q, want the flag's", f.Proxy)
	}
	t.Setenv(alert.EnvProxy, "user:XXXXSECRET@proxy:3128")
	want := `invalid $CMSYNC_ALERT_PROXY: must be an absolute http, https or socks5 URL with a host (the value is not shown: it may hold a password)`
	if err := parseAlertFlags(t, nil); err == nil || err.Error() != want {
		t.Errorf("bad proxy from the environment: %v, want %q", err, want)
	}
	t.Setenv(alert.EnvWebhook, "")
	t.Setenv(alert.EnvProxy, "http://proxy:3128")
	want = `$CMSYNC_ALERT_PROXY needs --alert-webhook (or $CMSYNC_ALERT_WEBHOOK)`
	if err := parseAlertFlags(t, nil); err == nil || err.Error() != want {
		t.Errorf("proxy without webhook: %v, want %q", err, want)
	}
}
