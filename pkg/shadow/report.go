package shadow

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/text"
)

// Summary is the top of a report.
type Summary struct {
	Changes        int `json:"changes"`
	PeerRestarts   int `json:"peerRestarts"`   // workloads the peer restarted
	CmsyncRestarts int `json:"cmsyncRestarts"` // workloads cmsync would restart
	PeerPods       int `json:"peerPods"`
	CmsyncPods     int `json:"cmsyncPods"`
	PodsSpared     int `json:"podsSpared"`
	// PodsSparedByRemount are the pods the peer restarted that cmsync's
	// remount policy (on-change: remount) would not have; RemountLeavesStale
	// the workloads it would remount where the settings run restart them:
	// stale if their applications read their files only at start.
	PodsSparedByRemount int      `json:"podsSparedByRemount"`
	RemountLeavesStale  []string `json:"remountLeavesStale,omitempty"`
	PeerMissed          int      `json:"peerMissed"`     // changes the peer missed
	UnreadRestarts      int      `json:"unreadRestarts"` // changes the peer restarted for keys no container reads
	Disagreements       int      `json:"disagreements"`
	// Dropped are the oldest rows the record's cap dropped.
	Dropped int `json:"dropped,omitempty"`
}

// Report is `shadow report`'s document.
type Report struct {
	APIVersion string  `json:"apiVersion"`
	Kind       string  `json:"kind"`
	Summary    Summary `json:"summary"`
	Items      []Row   `json:"items"`
}

// NewReport keeps the rows of namespace ns ("" for all) since since (zero:
// all), oldest first, and sums them up.
func NewReport(rows []Row, ns string, since time.Time, dropped int) Report {
	r := Report{APIVersion: "cmsync.kubectl-cmsync.io/v1alpha1", Kind: "ShadowReport", Items: []Row{}, Summary: Summary{Dropped: dropped}}
	for _, row := range rows {
		if ns != "" && row.Object.Namespace != ns || row.Time.Before(since) {
			continue
		}
		r.Items = append(r.Items, row)
	}
	slices.SortStableFunc(r.Items, func(a, b Row) int { return a.Time.Compare(b.Time) })
	s := &r.Summary
	for _, row := range r.Items {
		s.Changes++
		s.PeerPods += row.PeerPods
		s.CmsyncPods += row.CmsyncPods
		s.PodsSpared += row.Spared
		s.PodsSparedByRemount += row.SparedByRemount
		for _, w := range row.Workloads {
			name := w.Workload.Namespace + "/" + w.Workload.String()
			if w.RemountPolicy == ActRemount && !slices.Contains(s.RemountLeavesStale, name) {
				s.RemountLeavesStale = append(s.RemountLeavesStale, name)
			}
			if w.Peer != "" {
				s.PeerRestarts++
			}
			if w.Cmsync.restarts() {
				s.CmsyncRestarts++
			}
		}
		switch row.Class {
		case ClassPeerMissed:
			s.PeerMissed++
		case ClassUnreadKey:
			s.UnreadRestarts++
		}
		if row.Class != ClassAgree {
			s.Disagreements++
		}
	}
	return r
}

// PrintTable writes the summary, then one row per change.
func (r Report) PrintTable(w io.Writer) error {
	s := r.Summary
	fmt.Fprintf(w, "Changes seen: %d. Restarts: peer %d workloads (%d pods), cmsync %d workloads (%d pods). Pods spared: %d.\n",
		s.Changes, s.PeerRestarts, s.PeerPods, s.CmsyncRestarts, s.CmsyncPods, s.PodsSpared)
	fmt.Fprintf(w, "Changes the peer missed: %d. Changes restarted for keys no container reads: %d. Disagreements: %d.\n",
		s.PeerMissed, s.UnreadRestarts, s.Disagreements)
	fmt.Fprintf(w, "With on-change: remount (--reloader-on-change=remount for Reloader's opt-ins): pods spared: %d.\n", s.PodsSparedByRemount)
	if len(s.RemountLeavesStale) > 0 {
		fmt.Fprintf(w, "It would remount, not restart: %s. Each stays stale unless its application re-reads its files.\n", text.Printable(strings.Join(s.RemountLeavesStale, ", ")))
	}
	if s.Dropped > 0 {
		fmt.Fprintf(w, "The record's oldest %d rows were dropped (its cap).\n", s.Dropped)
	}
	fmt.Fprintln(w)
	if len(r.Items) == 0 {
		fmt.Fprintln(w, "No changes recorded in this range.")
		return nil
	}
	r.printBars(w)
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tNAMESPACE\tOBJECT\tKEYS\tPEER\tCMSYNC\tPEER PODS\tCMSYNC PODS\tCLASS")
	for _, row := range r.Items {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n", row.Time.UTC().Format(time.RFC3339), cell(row.Object.Namespace), cell(row.Object.String()),
			cell(keys(row.Keys)), cell(row.Peer()), cell(row.Cmsync()), row.PeerPods, row.CmsyncPods, row.Class)
	}
	return tw.Flush()
}

func keys(k []string) string {
	if len(k) == 0 {
		return "-"
	}
	return strings.Join(k, ",")
}

// cell is a value as one table cell: control characters escaped, tabs
// too, at most 80 cells wide.
func cell(s string) string {
	return text.Truncate(strings.ReplaceAll(text.Printable(s), "\t", " "), 80, "…")
}
