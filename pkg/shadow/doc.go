// Package shadow compares, change by change, what cmsync would have done
// (its loop run with --shadow: every decision made, nothing sent) with what
// a peer controller (Stakater Reloader) did to the same workloads.
//
// The decisions are pure: the peer's markers read from two versions of a
// pod template (marker.go), the pairing of a change with the markers seen
// within a window after it and the classification of each workload
// (pair.go), the record's cap (record.go) and the report (report.go). The
// I/O sits behind small interfaces: the workload informers that find the
// markers (watch.go) and the ConfigMap that keeps the record (store.go).
package shadow
