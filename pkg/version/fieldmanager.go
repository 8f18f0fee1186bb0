package version

// FieldManager is the name cmsync writes under: every create and patch it
// sends names it, so metadata.managedFields shows which fields cmsync owns
// (the restart annotation of a template, its refresh annotation and
// records). It must not start with "kubectl": Flux's kustomize-controller
// takes the fields of every Update manager whose name starts with "kubectl"
// into its own ownership and then drops those its manifests lack, which
// would revert each restart and strip the records.
const FieldManager = "cmsync"

// OtherFieldManagers are the names that other builds of cmsync write
// under (the plugin's user agent, and the controller's component name):
// the controller moves their entries to FieldManager when it starts.
var OtherFieldManagers = []string{"kubectl-cmsync", "kubectl-cmsync-controller"}
