package inspect

import "github.com/kubectl-cmsync/kubectl-cmsync/pkg/render/text"

// Printable escapes the control characters of text that comes from the
// cluster before it reaches a table or a header line (see text.Printable).
func Printable(s string) string { return text.Printable(s) }
