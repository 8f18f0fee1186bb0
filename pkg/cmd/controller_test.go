package cmd

import (
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

func TestControllerValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(o *ControllerOptions)
		want   string
	}{
		{"no namespace", func(o *ControllerOptions) { o.KeyNamespace = "" }, `no namespace for the Lease and the key Secret: set --key-namespace (in a pod it is the pod's own)`},
		{"bad lease name", func(o *ControllerOptions) { o.LeaseName = "Lease!" }, `--lease-name "Lease!": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`},
		{"no identity", func(o *ControllerOptions) { o.Identity = "" }, `no identity for the Lease: set --identity (in a pod, POD_NAME from the downward API)`},
		{"lease not above renew", func(o *ControllerOptions) { o.LeaseDuration = 10 * time.Second }, `--lease-duration (10s) must be more than --renew-deadline (10s)`},
		{"renew too close to retry", func(o *ControllerOptions) { o.RenewDeadline = 2 * time.Second }, `--renew-deadline (2s) must be more than 1.2 times --retry-period (2s)`},
		{"watch's checks", func(o *ControllerOptions) { o.Debounce = 0 }, `--debounce must be positive, got 0s`},
	}
	valid := func() *ControllerOptions {
		o := NewControllerOptions(genericclioptions.NewConfigFlags(false), genericiooptions.NewTestIOStreamsDiscard())
		o.KeyNamespace, o.Identity = "cmsync-system", "pod-a"
		return o
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := valid()
			tt.mutate(o)
			err := o.Validate()
			if err == nil || err.Error() != tt.want {
				t.Fatalf("Validate() = %v, want %q", err, tt.want)
			}
			if ExitCode(err) != ExitUsage {
				t.Errorf("exit code %d, want %d", ExitCode(err), ExitUsage)
			}
		})
	}
	o := valid()
	if err := o.Validate(); err != nil {
		t.Errorf("the defaults: %v", err)
	}
	if !o.RequireOptIn || !o.LeaderElect || o.Output != "json" {
		t.Errorf("defaults: require-opt-in %v, leader-elect %v, output %q", o.RequireOptIn, o.LeaderElect, o.Output)
	}
	// and without leader election, the durations do not matter
	o.LeaderElect, o.LeaseDuration = false, 0
	if err := o.Validate(); err != nil {
		t.Errorf("--leader-elect=false: %v", err)
	}
}
