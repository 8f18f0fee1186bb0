package reconcile

import "testing"

func TestSelect(t *testing.T) {
	cm := Changed{Kind: "ConfigMap", Name: "app-config"}
	matched := Changed{Kind: "ConfigMap", Name: "app-config", Annotations: map[string]string{ReloaderMatch: "true"}}
	secret := Changed{Kind: "Secret", Name: "app-config"}
	a := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		name         string
		requireOptIn bool
		s            Subject
		o            Changed
		want         Selection
		reason       string
	}{
		{"flags select a consumer", false, Subject{Consumes: true}, cm, Consumers, "selected"},
		{"not a consumer", false, Subject{}, cm, Skip, "does not read it"},
		{"opt-in required, none", true, Subject{Consumes: true}, cm, Skip,
			"not opted in: --require-opt-in is set; annotate the workload with kubectl-cmsync.io/watch=true"},
		{"opted in", true, Subject{Annotations: a(AnnotationWatch, "true"), Consumes: true}, cm, Consumers, "opted in (kubectl-cmsync.io/watch=true)"},
		{"opted in on the template", true, Subject{TemplateAnnotations: a(AnnotationWatch, "true"), Consumes: true}, cm, Consumers, "opted in (kubectl-cmsync.io/watch=true)"},
		{"opted out", false, Subject{Annotations: a(AnnotationWatch, "false"), Consumes: true}, cm, Skip, "opted out (kubectl-cmsync.io/watch=false)"},
		{"paused", false, Subject{Annotations: a(AnnotationWatch, "true", AnnotationPaused, "true"), Consumes: true}, cm, Skip, "paused (kubectl-cmsync.io/paused=true)"},
		{"object ignored by Reloader's annotation", false, Subject{Annotations: a(ReloaderAuto, "true"), Consumes: true},
			Changed{Kind: "ConfigMap", Name: "x", Annotations: a(ReloaderIgnore, "true")}, Skip, "the ConfigMap has reloader.stakater.com/ignore=true"},
		{"object opted out", false, Subject{Consumes: true},
			Changed{Kind: "Secret", Name: "x", Annotations: a(AnnotationWatch, "false")}, Skip, "the Secret has kubectl-cmsync.io/watch=false"},
		{"reloader auto", true, Subject{Annotations: a(ReloaderAuto, "true"), Consumes: true}, cm, Consumers, "opted in (reloader.stakater.com/auto=true)"},
		{"reloader auto on the template", true, Subject{TemplateAnnotations: a(ReloaderAuto, "true"), Consumes: true}, cm, Consumers, "opted in (reloader.stakater.com/auto=true)"},
		{"reloader auto needs a consumer", true, Subject{Annotations: a(ReloaderAuto, "true")}, cm, Skip, "does not read it"},
		{"reloader auto false", false, Subject{Annotations: a(ReloaderAuto, "false"), Consumes: true}, cm, Skip, "opted out (reloader.stakater.com/auto=false)"},
		{"typed auto of the kind", true, Subject{Annotations: a(ReloaderSecretAuto, "true"), Consumes: true}, secret, Consumers, "opted in (secret.reloader.stakater.com/auto=true)"},
		{"typed auto of the other kind", true, Subject{Annotations: a(ReloaderSecretAuto, "true"), Consumes: true}, cm, Skip,
			"not opted in: --require-opt-in is set; annotate the workload with kubectl-cmsync.io/watch=true"},
		{"named, consumed", true, Subject{Annotations: a(ReloaderConfigMapReload, "other, app-config"), Consumes: true}, cm, Consumers, "named in configmap.reloader.stakater.com/reload"},
		{"named by a pattern", true, Subject{Annotations: a(ReloaderConfigMapReload, "app-.*"), Consumes: true}, cm, Consumers, "named in configmap.reloader.stakater.com/reload"},
		{"a pattern is anchored", true, Subject{Annotations: a(ReloaderConfigMapReload, "app"), Consumes: true}, cm, Skip, "not named in configmap.reloader.stakater.com/reload"},
		{"named, not consumed", true, Subject{Annotations: a(ReloaderConfigMapReload, "app-config")}, cm, Restart,
			"named in configmap.reloader.stakater.com/reload; the pod spec does not read it, so a restart makes the application read it"},
		{"named list of the other kind", true, Subject{Annotations: a(ReloaderSecretReload, "app-config"), Consumes: true}, cm, Skip,
			"not opted in: --require-opt-in is set; annotate the workload with kubectl-cmsync.io/watch=true"},
		{"a list that does not name it", false, Subject{Annotations: a(ReloaderConfigMapReload, "other"), Consumes: true}, cm, Skip, "not named in configmap.reloader.stakater.com/reload"},
		{"a list that does not name it, with auto", false, Subject{Annotations: a(ReloaderConfigMapReload, "other", ReloaderAuto, "true"), Consumes: true}, cm, Consumers, "opted in (reloader.stakater.com/auto=true)"},
		{"excluded", false, Subject{Annotations: a(ReloaderAuto, "true", ReloaderConfigMapExclude, "a, app-config"), Consumes: true}, cm, Skip, "excluded by configmaps.exclude.reloader.stakater.com/reload"},
		{"search and match", true, Subject{Annotations: a(ReloaderSearch, "true"), Consumes: true}, matched, Consumers, "reloader.stakater.com/search and the ConfigMap's reloader.stakater.com/match"},
		{"search without match", false, Subject{Annotations: a(ReloaderSearch, "true"), Consumes: true}, cm, Skip,
			"reloader.stakater.com/search=true and the ConfigMap lacks reloader.stakater.com/match=true"},
		{"workload annotations win over the template's", true, Subject{Annotations: a(ReloaderAuto, "false"), TemplateAnnotations: a(ReloaderAuto, "true"), Consumes: true}, cm, Skip,
			"opted out (reloader.stakater.com/auto=false)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Select(tc.requireOptIn, tc.s, tc.o)
			if got.Selection != tc.want || got.Reason != tc.reason {
				t.Fatalf("Select = %v %q, want %v %q", got.Selection, got.Reason, tc.want, tc.reason)
			}
		})
	}
}
