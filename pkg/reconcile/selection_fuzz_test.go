package reconcile

import (
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// FuzzReloadLists: Reloader's reload and exclude lists (a namespace's user
// writes them; each entry an anchored regular expression, else a name)
// never panic nor hang the selection, whatever they hold; the decision is
// one of the three with a reason; a name listed as itself (quoted) is
// named, and a listed name never makes a workload that does not read the
// object more than a Restart. testdata/fuzz holds inputs it found.
func FuzzReloadLists(f *testing.F) {
	for _, seed := range [][2]string{{"app-config", "app-config"}, {"app-.*, other", "app-config"}, {"(", "("}, {"[a-", "x"}, {",,, ,", "x"},
		{"a{1000}{1000}", "a"}, {"(?i)APP", "app"}, {strings.Repeat("(a*)*", 50), strings.Repeat("a", 64) + "b"}, {"\\", "\\"}, {"x|", ""}} {
		f.Add(seed[0], seed[1], false, true)
	}
	f.Add("db", "db", true, false)
	f.Fuzz(func(t *testing.T, list, name string, secret, consumes bool) {
		kind := inspect.KindConfigMap
		if secret {
			kind = inspect.KindSecret
		}
		start := time.Now()
		for _, ann := range []map[string]string{
			{ReloaderConfigMapReload: list, ReloaderSecretReload: list},
			{ReloaderConfigMapExclude: list, ReloaderSecretExclude: list, ReloaderAuto: "true"},
			{ReloaderConfigMapReload: list, ReloaderSecretReload: list, AnnotationWatch: "true"},
		} {
			for _, s := range []Subject{{Annotations: ann, Consumes: consumes}, {Annotations: map[string]string{}, TemplateAnnotations: ann, Consumes: consumes}} {
				o := Changed{Kind: kind, Name: name}
				d := Select(true, s, o)
				if d.Selection < Skip || d.Selection > Restart || d.Reason == "" {
					t.Fatalf("Select(%q, %q): %+v", list, name, d)
				}
				if d.Selection == Restart && (consumes || !Named(s, o)) {
					t.Fatalf("Select(%q, %q, consumes %v): a restart of a workload it does not name: %+v", list, name, consumes, d)
				}
			}
		}
		quoted := Subject{Annotations: map[string]string{ReloaderConfigMapReload: list + "," + regexp.QuoteMeta(strings.TrimSpace(name)),
			ReloaderSecretReload: list + "," + regexp.QuoteMeta(strings.TrimSpace(name))}}
		// (names are UTF-8, as the API server's JSON is: a regular expression
		// of invalid UTF-8 does not compile and is compared as a name)
		if utf8.ValidString(name) && strings.TrimSpace(name) == name && name != "" && !strings.Contains(name, ",") && !Named(quoted, Changed{Kind: kind, Name: name}) {
			t.Fatalf("%q listed as itself in %q is not named", name, quoted.Annotations[ReloaderConfigMapReload])
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("Select over %d bytes of lists took %s", len(list), d)
		}
	})
}
