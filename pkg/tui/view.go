package tui

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"charm.land/bubbles/v2/table"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/text"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/render"
)

// Styles, all in one place. Without colour (NO_COLOR, or the ASCII
// profile) the selected row stays visible by reverse video.
var (
	styleHeader   = lipgloss.NewStyle().Bold(true)
	styleTitle    = lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("6"))
	styleOK       = lipgloss.NewStyle().Foreground(lipgloss.Color("2"))
	styleWarn     = lipgloss.NewStyle().Foreground(lipgloss.Color("3"))
	styleError    = lipgloss.NewStyle().Foreground(lipgloss.Color("1")).Bold(true)
	styleDim      = lipgloss.NewStyle().Faint(true)
	styleSelected = lipgloss.NewStyle().Reverse(true)
	styleCell     = lipgloss.NewStyle().Padding(0, 1, 0, 0)
	styleColHead  = lipgloss.NewStyle().Bold(true).Padding(0, 1, 0, 0)
)

// ObjectHeaders are the columns of the objects screen.
var ObjectHeaders = []string{"", "NAMESPACE", "NAME", "KIND", "PODS", "HOT", "RESTART", "NEVER", "MISSING", "FRESHNESS", "CHANGED"}

func newTable() table.Model {
	t := table.New(table.WithFocused(true), table.WithKeyMap(tableKeys()))
	t.SetStyles(table.Styles{Header: styleColHead, Cell: styleCell, Selected: styleSelected})
	return t
}

// objectRow is one ConfigMap or Secret with its uses counted by verdict and
// its verified uses by state.
type objectRow struct {
	Key                          inspect.ObjectKey
	Exists, Unused               bool
	Pods                         int
	Hot, Restart, Never, Missing int
	// Good (in-sync, current), Pending, Bad (stale, broken, missing) and
	// Unknown (unverifiable) count the verified uses; n/a ones are left out.
	Good, Pending, Bad, Unknown int
	LastChange                  time.Time
}

// objectRows groups the uses by object, in the report's order.
func (m *Model) objectRows() []objectRow {
	var rows []objectRow
	index := map[inspect.ObjectKey]int{}
	pods := map[inspect.ObjectKey]map[string]bool{}
	for _, raw := range m.items {
		it := m.withVerified(raw)
		k := it.Key()
		i, ok := index[k]
		if !ok {
			i = len(rows)
			index[k] = i
			rows = append(rows, objectRow{Key: k, Exists: it.Object.Exists, LastChange: lastChangeOf(it)})
			pods[k] = map[string]bool{}
		}
		r := &rows[i]
		if it.Verdict == inspect.VerdictUnused || it.Verdict == inspect.VerdictNoPods {
			// no pod consumes it now (no-pods: only completed pods did)
			r.Unused = true
			continue
		}
		if it.Pod.Name != "" {
			pods[k][it.Pod.Name] = true
		}
		switch it.Verdict {
		case inspect.VerdictHotUpdate:
			r.Hot++
		case inspect.VerdictRestartNeeded, inspect.VerdictBreaksOnChange:
			r.Restart++
		case inspect.VerdictNeverChanges:
			r.Never++
		case inspect.VerdictMissing:
			r.Missing++
		}
		switch it.State {
		case inspect.StateInSync, inspect.StateCurrent:
			r.Good++
		case inspect.StatePending:
			r.Pending++
		case inspect.StateStale, inspect.StateBroken, inspect.StateMissing:
			r.Bad++
		case inspect.StateUnverifiable:
			r.Unknown++
		}
	}
	out := rows[:0]
	for _, r := range rows {
		r.Pods = len(pods[r.Key])
		if r.Unused && !m.showUnused {
			continue
		}
		if m.filter != "" && !strings.Contains(strings.ToLower(r.Key.Namespace+"/"+r.Key.Name), strings.ToLower(m.filter)) {
			continue
		}
		out = append(out, r)
	}
	return out
}

// Freshness is the bar of verified states: █ in-sync or current, ▒
// pending, ░ stale/broken/missing, ? unverifiable; then good/verified.
// It is blank until a use was verified.
func Freshness(good, pending, bad, unknown int) string {
	n := good + pending + bad + unknown
	if n == 0 {
		return ""
	}
	const width = 6
	cells := func(c int) int {
		if n <= width {
			return c
		}
		w := c * width / n
		if w == 0 && c > 0 {
			w = 1
		}
		return w
	}
	bar := strings.Repeat("█", cells(good)) + strings.Repeat("▒", cells(pending)) + strings.Repeat("░", cells(bad)) + strings.Repeat("?", cells(unknown))
	return fmt.Sprintf("%s %d/%d", bar, good, n)
}

// objectTable is the objects screen: a row per object, marked ones with *.
type objectTable struct {
	rows   []objectRow
	marked map[inspect.ObjectKey]bool
	now    time.Time
}

func (objectTable) Header() []string { return ObjectHeaders }

func (t objectTable) Rows() [][]string {
	rows := make([][]string, 0, len(t.rows))
	for _, r := range t.rows {
		mark := " "
		if t.marked[r.Key] {
			mark = "*"
		}
		name := r.Key.Name
		if !r.Exists {
			name += " (missing)"
		}
		changed := ""
		if r.Exists {
			changed = age(r.LastChange, t.now)
		}
		rows = append(rows, render.Cells([]string{mark, r.Key.Namespace, name, r.Key.Kind, fmt.Sprint(r.Pods), fmt.Sprint(r.Hot), fmt.Sprint(r.Restart),
			fmt.Sprint(r.Never), fmt.Sprint(r.Missing), Freshness(r.Good, r.Pending, r.Bad, r.Unknown), changed}))
	}
	return rows
}

// refreshTables recomputes the rows of both tables from the model: the
// objects, and the uses of the current object as status --verify shows them.
func (m *Model) refreshTables() {
	m.objects = m.objectRows()
	setTable(&m.objTable, objectTable{rows: m.objects, marked: m.marked, now: m.now}, m.width, 2)

	m.uses = m.uses[:0]
	for _, raw := range m.items {
		if raw.Key() != m.current || raw.Verdict == inspect.VerdictUnused || raw.Verdict == inspect.VerdictNoPods {
			continue
		}
		m.uses = append(m.uses, m.withVerified(raw))
	}
	m.groupWarnings()
	setTable(&m.useTable, render.Uses{Items: m.uses, Verify: true, OneObject: true, Now: m.now}, m.width, 3)
}

// groupWarnings groups the observed uses left unverifiable by one cause
// with a known fix (inspect.GroupWarnings, as status --verify does): the
// status line says the first warning, and the rows of the consumers screen
// point to theirs.
func (m *Model) groupWarnings() {
	var unverifiable []inspect.Use
	for _, raw := range m.items {
		if o, ok := m.observed[raw.ID()]; ok && o.State == inspect.StateUnverifiable {
			unverifiable = append(unverifiable, m.withVerified(raw))
		}
	}
	m.warnings = inspect.GroupWarnings(unverifiable)
	m.warningOf = map[inspect.UseID]int{}
	for _, it := range unverifiable {
		if it.Warning > 0 {
			m.warningOf[it.ID()] = it.Warning
		}
	}
	for i := range m.uses {
		m.uses[i].Warning = m.warningOf[m.uses[i].ID()]
	}
}

// warningText is the status line's part of the warnings: the first, with
// its count, cause and fix, and how many more there are.
func (m *Model) warningText() string {
	if len(m.warnings) == 0 {
		return ""
	}
	s := "Warning: " + m.warnings[0].String(1)
	if n := len(m.warnings) - 1; n > 0 {
		s += fmt.Sprintf(" (and %s)", render.Plural(n, "more warning"))
	}
	return s
}

// setTable puts the header and rows of tbl in t, sizes the columns to their
// content and shrinks the widest ones to fit width (shrinkable: the index
// of the first column that may shrink).
func setTable(t *table.Model, tbl render.Table, width, shrinkable int) {
	headers := tbl.Header()
	var rows []table.Row
	for _, r := range tbl.Rows() {
		rows = append(rows, r)
	}
	widths := make([]int, len(headers))
	for i, h := range headers {
		widths[i] = lipgloss.Width(h)
	}
	for _, r := range rows {
		for i, c := range r {
			if i < len(widths) {
				widths[i] = max(widths[i], lipgloss.Width(c))
			}
		}
	}
	total := func() int {
		s := 0
		for _, w := range widths {
			s += w + 1
		}
		return s
	}
	for total() > width {
		wi := shrinkable
		for i := shrinkable; i < len(widths); i++ {
			if widths[i] > widths[wi] {
				wi = i
			}
		}
		if widths[wi] <= 6 {
			break
		}
		widths[wi]--
	}
	cols := make([]table.Column, len(headers))
	for i, h := range headers {
		cols[i] = table.Column{Title: h, Width: widths[i]}
	}
	// rows first: columns of another shape would index past them; the
	// cursor stays where it was
	cursor := t.Cursor()
	t.SetRows(nil)
	t.SetColumns(cols)
	t.SetRows(rows)
	t.SetCursor(min(max(cursor, 0), len(rows)-1))
	t.SetWidth(width)
}

// layout sizes the components to the terminal.
func (m *Model) layout() {
	// header, status line, help bar; the consumers screen has a detail line
	m.objTable.SetHeight(max(m.height-3, 2))
	m.useTable.SetHeight(max(m.height-4, 2))
	m.diffView.SetWidth(m.width)
	m.diffView.SetHeight(max(m.height-4, 1))
	m.help.SetWidth(m.width)
	m.input.SetWidth(max(m.width-30, 10))
	m.refreshTables()
}

// View renders the screen.
func (m *Model) View() tea.View {
	v := tea.NewView(m.Render())
	v.AltScreen = true
	v.WindowTitle = "kubectl cmsync dashboard"
	return v
}

// Render is the screen as text (with styles).
func (m *Model) Render() string {
	if m.quitting {
		return ""
	}
	var b strings.Builder
	b.WriteString(m.headerLine())
	b.WriteString("\n")
	body := ""
	switch m.screen {
	case objectsScreen:
		body = m.objTable.View()
		if len(m.objects) == 0 {
			body = strings.SplitN(body, "\n", 2)[0] + "\n" + m.emptyText()
		}
	case consumersScreen:
		body = m.useTable.View() + "\n" + truncate(m.detailLine(), m.width)
	case diffScreen:
		body = m.diffView.View()
		if m.diffTitle != "" {
			body = styleTitle.Render(truncate(m.diffTitle, m.width)) + "\n" + body
		}
	case planScreen:
		body = m.planText()
	case helpScreen:
		body = m.helpText()
	}
	b.WriteString(fit(body, m.height-3))
	b.WriteString("\n")
	b.WriteString(truncate(m.statusLine(), m.width))
	b.WriteString("\n")
	b.WriteString(m.help.ShortHelpView(m.keys.ShortHelp()))
	return b.String()
}

// fit pads or cuts s to exactly h lines.
func fit(s string, h int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if h < 1 {
		h = 1
	}
	for len(lines) < h {
		lines = append(lines, "")
	}
	return strings.Join(lines[:h], "\n")
}

// truncate cuts a line at the screen's edge (styles kept).
func truncate(s string, w int) string { return text.Truncate(s, w, "") }

func (m *Model) headerLine() string {
	ns := m.scope.Namespace
	if ns == "" {
		ns = "all namespaces"
	} else {
		ns = "namespace " + ns
	}
	parts := []string{styleTitle.Render("cmsync"), "context " + orDash(m.conn.Context), ns}
	if m.scope.PodSelector != "" {
		parts = append(parts, "pods -l "+m.scope.PodSelector)
	}
	if m.scope.Secrets {
		parts = append(parts, "+secrets")
	}
	if m.scope.Narrowed() {
		parts = append(parts, selectionText(m.scope))
	}
	if m.filter != "" {
		parts = append(parts, "filter /"+m.filter)
	}
	if m.screen == consumersScreen || m.screen == diffScreen {
		parts = append(parts, strings.ToLower(m.current.Kind)+"/"+m.current.Name)
	}
	parts = append(parts, m.connection())
	return truncate(strings.Join(parts, "  "), m.width)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// connection is the watch state: syncing, live, or the watch error.
func (m *Model) connection() string {
	switch {
	case m.probeErr != nil:
		return styleError.Render("● unreachable")
	case len(m.errs) > 0:
		return styleError.Render("● watch failing")
	case !m.synced:
		return styleWarn.Render("○ syncing")
	}
	return styleOK.Render("● live")
}

func (m *Model) statusLine() string {
	if m.inputFor != "" {
		return m.input.View()
	}
	// what the status line shows may quote the cluster (errors, exec
	// stderr in the unverifiable summary): escaped before it is styled
	line, isErr := m.statusText()
	if isErr {
		return styleError.Render(text.Printable(line))
	}
	return styleDim.Render(text.Printable(line))
}

// statusText is the status line's text, and whether it is an error.
func (m *Model) statusText() (string, bool) {
	if m.probeErr != nil {
		return fmt.Sprintf("error: cannot reach the API server %s: %v (retrying every %s)", m.conn.Server, m.probeErr, ProbeRetry), true
	}
	if len(m.errs) > 0 {
		var rs []string
		for r := range m.errs {
			rs = append(rs, r)
		}
		sort.Strings(rs)
		return "error: " + m.errs[rs[0]] + " (retrying)", true
	}
	s := m.status
	if s == "" && len(m.notes) > 0 {
		s = strings.Join(m.notes, "; ")
	}
	if m.verifying {
		if s != "" {
			s += "; "
		}
		s += "verifying..."
	}
	if m.statusErr {
		return "error: " + s, true
	}
	if w := m.warningText(); w != "" {
		s = strings.TrimPrefix(s+"; "+w, "; ")
	}
	return s, false
}

func (m *Model) emptyText() string {
	if !m.watched || !m.synced {
		return "reading the cluster..."
	}
	what := "ConfigMaps"
	if m.scope.Secrets {
		what = "ConfigMaps or Secrets"
	}
	hint := "u shows unused ones, n changes the namespace"
	if m.filter != "" {
		return fmt.Sprintf("nothing matches the filter /%s (esc clears it)", m.filter)
	}
	return fmt.Sprintf("no pod consumes %s here (%s)", what, hint)
}

// detailLine explains the selected use: the propagation of a change, else
// the reason of its state or verdict.
func (m *Model) detailLine() string {
	it, ok := m.selectedUse()
	if !ok {
		return ""
	}
	// reasons quote exec stderr and paths from the cluster
	return text.Printable(m.detailText(it))
}

func (m *Model) detailText(it inspect.Use) string {
	if t := m.tracks[it.ID()]; t != nil && (t.Done() || it.State == inspect.StatePending) {
		return t.describe(m.now)
	}
	if it.StateReason != "" {
		return string(it.State) + ": " + it.StateReason
	}
	return string(it.Verdict) + ": " + it.Reason
}

func (m *Model) planText() string {
	if m.planning || m.plan == nil {
		return "observing the consumers and planning (as kubectl cmsync refresh --dry-run)..."
	}
	var b strings.Builder
	b.WriteString(styleTitle.Render("refresh "+keysText(m.plan.Keys)) + "  (the plan of kubectl cmsync refresh --dry-run)\n\n")
	b.WriteString(m.plan.Text)
	b.WriteString("\n")
	if m.applying {
		b.WriteString(fmt.Sprintf("applying: %d/%d current, %s elapsed", m.progress.Current, m.progress.Total, m.progress.Elapsed.Round(100*time.Millisecond)))
		return b.String()
	}
	q := "Apply this plan? [y/N]"
	if n := m.plan.Restarts; n > 0 {
		q = styleWarn.Render(fmt.Sprintf("The plan restarts %d workloads (their pods are replaced).", n)) + " Apply it? [y/N]"
	}
	b.WriteString(q)
	return b.String()
}

func (m *Model) helpText() string {
	var b strings.Builder
	b.WriteString(styleTitle.Render("kubectl cmsync dashboard") + "\n\n")
	b.WriteString(m.help.FullHelpView(m.keys.FullHelp()))
	b.WriteString("\n\n")
	b.WriteString("Objects: one row per ConfigMap (and Secret with s) that pods consume.\n")
	b.WriteString("HOT/RESTART/NEVER/MISSING count uses by verdict; FRESHNESS shows verified\n")
	b.WriteString("uses: █ in-sync/current ▒ pending ░ stale/broken ? unverifiable.\n")
	b.WriteString("A data change marks hot-updating consumers pending and verifies them until\n")
	b.WriteString("the kubelet has written it. r plans a refresh and asks before applying.\n\n")
	b.WriteString(styleDim.Render("any key: back"))
	return b.String()
}

// selectionText names what the arguments selected, as they were given
// (deployment/web, configmap/app-config).
func selectionText(s Scope) string {
	var names []string
	for _, w := range s.Workloads {
		names = append(names, strings.ToLower(w.Key.Workload.Kind)+"/"+w.Key.Workload.Name)
	}
	for _, k := range s.Names {
		names = append(names, strings.ToLower(k.Kind)+"/"+k.Name)
	}
	if len(names) > 3 {
		names = append(names[:3], fmt.Sprintf("and %d more", len(names)-3))
	}
	return strings.Join(names, " ")
}
