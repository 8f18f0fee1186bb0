package reconcile

import "github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"

// cmsync's own annotations, read on workloads and pods (and on ConfigMaps
// and Secrets: watch) and written by the controller (applied).
const (
	// AnnotationWatch on a workload (or a bare pod): "true" opts it in,
	// which --require-opt-in (the controller's default) asks for; "false"
	// opts it out. On a ConfigMap or Secret, "false" makes watch and the
	// controller ignore its changes.
	AnnotationWatch = "kubectl-cmsync.io/watch"
	// AnnotationPaused "true" on a workload: nothing is done to it while it
	// is set; the changes seen meanwhile are logged as skipped.
	AnnotationPaused = "kubectl-cmsync.io/paused"
	// AnnotationOnChange on a workload (or its pod template) says what a
	// change of an object it consumes does: OnChangeRestart restarts it,
	// OnChangeRemount remounts its volumes and restarts it only for env
	// and subPath uses (see OnChange for the default).
	AnnotationOnChange = "kubectl-cmsync.io/on-change"
	// AnnotationApplied is where the controller records, on a workload (or a
	// pod of another owner) it made current, per object the Digest of what its
	// consumers read of it then (a JSON object, "configmap/NAME" -> digest): a
	// restarted controller, or a new leader, compares it with the digests of
	// the objects now and acts only where they differ.
	AnnotationApplied = "kubectl-cmsync.io/applied-digest"
	// AnnotationReloadHook on a workload, its pod template or a bare pod:
	// the HTTP request each pod is sent once its volumes are remounted
	// and verified current ("POST :9090/-/reload"); such a workload is
	// never restarted for a volume use (see OnChange).
	AnnotationReloadHook = refresh.ReloadHookAnnotation
)

// Reloader's annotations (github.com/stakater/Reloader), honoured with its
// meaning so that a team can switch without editing manifests. The
// difference they see: a consumer that only mounts the object as a volume
// is refreshed without a restart.
const (
	ReloaderAuto             = "reloader.stakater.com/auto"
	ReloaderConfigMapAuto    = "configmap.reloader.stakater.com/auto"
	ReloaderSecretAuto       = "secret.reloader.stakater.com/auto"
	ReloaderConfigMapReload  = "configmap.reloader.stakater.com/reload"
	ReloaderSecretReload     = "secret.reloader.stakater.com/reload"
	ReloaderConfigMapExclude = "configmaps.exclude.reloader.stakater.com/reload"
	ReloaderSecretExclude    = "secrets.exclude.reloader.stakater.com/reload"
	ReloaderSearch           = "reloader.stakater.com/search"
	ReloaderMatch            = "reloader.stakater.com/match"
	ReloaderIgnore           = "reloader.stakater.com/ignore"
	ReloaderPausePeriod      = "deployment.reloader.stakater.com/pause-period"
)

// The values of AnnotationOnChange.
const (
	OnChangeRestart = "restart"
	OnChangeRemount = "remount"
)
