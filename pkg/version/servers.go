package version

import (
	"fmt"

	utilversion "k8s.io/apimachinery/pkg/util/version"
)

// The Kubernetes minor versions this client is tested against: the e2e
// suite runs on the oldest and the newest (hack/cluster builds both).
const (
	OldestServerMinor = 30
	NewestServerMinor = 37
)

// SupportedServers names the supported range, as printed by `version`.
func SupportedServers() string {
	return fmt.Sprintf("v1.%d to v1.%d", OldestServerMinor, NewestServerMinor)
}

// ServerWarning says why a server of this gitVersion is outside the tested
// range, or "" when it is inside (or its version cannot be read: a
// distribution's own spelling is not a reason to warn).
func ServerWarning(gitVersion string) string {
	v, err := utilversion.ParseGeneric(gitVersion)
	if err != nil {
		return ""
	}
	if v.Major() == 1 && v.Minor() >= OldestServerMinor && v.Minor() <= NewestServerMinor {
		return ""
	}
	return fmt.Sprintf("the Kubernetes API server is %s, outside the versions kubectl-cmsync is tested against (%s): "+
		"what it says about the kubelet may not hold there", gitVersion, SupportedServers())
}
