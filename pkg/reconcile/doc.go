// Package reconcile is the continuous refresh: it watches ConfigMaps and
// Secrets, coalesces their changes, and makes the consumers that read a
// changed key current through the one refresh engine (refresh.Refresher,
// the plan of `refresh --strategy auto`). `kubectl cmsync watch` runs its
// Loop; pkg/controller runs the same Loop in the cluster.
//
// The decisions are pure functions, each in a file of its own:
//   - changes.go: which keys of an object changed (Diff) and which uses
//     read them (Concerns): a key no use reads is no reason to act;
//   - selection.go: which workloads a change may be acted on (Select, over
//     the annotations of annotations.go: cmsync's own and Reloader's, with
//     Reloader's meaning), and which name an object in Reloader's reload
//     list (Named);
//   - debounce.go: when a burst of edits is due (a trailing debounce with a
//     maximum wait, per namespace);
//   - digest.go: the keyed digest of what a consumer reads;
//   - scope.go: which namespaces, objects and workload kinds are handled
//     at all (Scope), and the kinds --ignore-workload-kinds accepts.
//
// The loop and its cluster I/O: loop.go (informers, the pending changes,
// the debounce), scope_loop.go (the namespace informer, the informers'
// label selector, what a round drops as out of scope), queue.go (the due namespaces handed to the workers),
// round.go (one debounced namespace: load, build, plan,
// apply), gate.go (restarts held while a rollout is under way or over the
// limit), named.go (restarts asked for by Reloader's reload list),
// record.go and resume.go (the records of what a consumer was made current
// with, and the check of them at start), subjects.go (the workloads'
// annotations), event.go (what the loop reports).
package reconcile
