// Package kubectlcatalog keeps kubectl's message catalog from being
// loaded. The kubectl packages that shell completion imports
// (k8s.io/kubectl/pkg/util/completion and the commands it reaches) call
// i18n.T in their package variables, and its first call parses the
// embedded catalog: 30 ms of the 52 ms of package initialisation of every
// run, on a loaded machine (docs/performance.md). cmsync prints none of
// those messages; untranslated, i18n.T returns each as written.
//
// Importing this package is all it takes: its path sorts before
// k8s.io/kubectl's, and it needs only i18n, so Go initialises it before
// any package whose variables call i18n.T.
package kubectlcatalog

import "k8s.io/kubectl/pkg/util/i18n"

func init() {
	i18n.LoadTranslationsFunc = func() error { return nil }
}
