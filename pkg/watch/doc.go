// Package watch holds the decisions of the continuous modes (the watch
// command and the in-cluster controller): which keys of a ConfigMap or Secret
// changed and which uses read them, which workloads a change may be acted on
// (cmsync's own annotations and Reloader's), when a burst of edits is due
// (a trailing debounce with a maximum wait), and the keyed digest of what a
// consumer reads that is recorded on the objects acted on. It is pure: the
// informers, the clock, the refresh engine and the API writes are the
// caller's.
package watch
