package tui

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/table"
	"charm.land/bubbles/v2/textinput"
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/text"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/render"
)

// Options configure the dashboard.
type Options struct {
	// Connection is the kube context the dashboard opens on.
	Connection
	// Scope is what to watch first (`n` and `s` change it).
	Scope Scope
	// Contexts are the kubeconfig's contexts, in name order, and Switch
	// connects to one of them (the context keys); nil: the dashboard stays
	// on its context.
	Contexts []string
	Switch   Switch
	// Now is the clock (tests fix it).
	Now func() time.Time
	// Timeout bounds one refresh's wait for its consumers.
	Timeout time.Duration
}

type screen int

const (
	objectsScreen screen = iota
	consumersScreen
	diffScreen
	planScreen
	helpScreen
)

// Model is the dashboard's state. Update changes it only from messages;
// every cluster call is a tea.Cmd.
type Model struct {
	opts Options
	// conn is the kube context watched now; gen counts the switches, so
	// that an answer of an earlier context is told apart
	conn Connection
	gen  int
	// failedContext is the context a switch to failed last: c goes on
	// from it
	failedContext string
	feed          *Feed
	scope         Scope
	keys          keyMap

	width, height int

	// from the informers
	snap    *inspect.Snapshot
	items   []inspect.Use
	synced  bool
	watched bool // a first snapshot arrived
	errs    map[string]string
	// notes: optional kinds RBAC denies (shown while the status is empty)
	notes []string
	// probeErr is the last answer of the API server probe
	probeErr error
	now      time.Time

	// what verification found, and the uses followed after a change
	observed map[inspect.UseID]verification
	tracks   map[inspect.UseID]*track
	// one verification batch runs at a time; queued uses wait for it
	verifying bool
	queue     map[inspect.UseID]bool

	screen, back screen
	objects      []objectRow
	objTable     table.Model
	marked       map[inspect.ObjectKey]bool
	showUnused   bool
	filter       string
	input        textinput.Model
	inputFor     string // "filter" or "namespace" while typing

	current  inspect.ObjectKey // the object of the consumers screen
	uses     []inspect.Use
	useTable table.Model

	diffView  viewport.Model
	diffTitle string

	plan     *Plan
	planning bool
	applying bool
	progress refresh.Progress

	status    string
	statusErr bool
	// warnings group the observed uses left unverifiable by one cause
	// (inspect.GroupWarnings); warningOf numbers those uses
	warnings  []inspect.Warning
	warningOf map[inspect.UseID]int
	help      help.Model
	quitting  bool
	// a quit key pressed while a refresh is being applied: the next one
	// quits, leaving it half done (interrupted says so)
	quitArmed   bool
	interrupted bool
}

// Interrupted reports, after the program ended, whether the user quit while
// a refresh was being applied, and the targets of that plan: some of them
// may have been changed and others not.
func (m *Model) Interrupted() (bool, []string) {
	if !m.interrupted || m.plan == nil {
		return m.interrupted, nil
	}
	var targets []string
	for _, a := range m.plan.Actions {
		if a.Action != refresh.ActionNone && a.Action != refresh.ActionManual {
			targets = append(targets, a.Target.String())
		}
	}
	return true, targets
}

// New returns the dashboard model; the program's Init starts the watch.
func New(o Options) *Model {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Minute
	}
	m := &Model{opts: o, conn: o.Connection, scope: o.Scope, keys: newKeyMap(), observed: map[inspect.UseID]verification{},
		tracks: map[inspect.UseID]*track{}, queue: map[inspect.UseID]bool{}, marked: map[inspect.ObjectKey]bool{},
		width: 80, height: 24, help: help.New(), now: o.Now()}
	m.objTable = newTable()
	m.useTable = newTable()
	m.diffView = viewport.New()
	m.input = textinput.New()
	m.layout()
	return m
}

// Init starts watching the scope.
func (m *Model) Init() tea.Cmd {
	return m.watch(m.scope)
}

// watch replaces the source with one for scope.
func (m *Model) watch(scope Scope) tea.Cmd {
	if m.feed != nil {
		m.feed.Stop()
	}
	m.scope = scope
	m.feed = m.conn.NewFeed(scope)
	m.feed.Start()
	m.watched, m.synced = false, false
	m.snap, m.items, m.objects = nil, nil, nil
	m.observed = map[inspect.UseID]verification{}
	m.tracks = map[inspect.UseID]*track{}
	m.queue = map[inspect.UseID]bool{}
	m.marked = map[inspect.ObjectKey]bool{}
	m.refreshTables()
	src := m.feed
	m.probeErr = nil
	src.poke() // a first (maybe empty) snapshot even before any event
	return tea.Batch(src.Next(), src.Probe(0))
}

// Messages of the commands.
type (
	verifiedMsg struct {
		items []inspect.Use
		at    time.Time
		gen   int
	}
	recheckMsg struct{ ids []inspect.UseID }
	diffMsg    struct {
		title, text string
		err         error
	}
	planMsg struct {
		plan Plan
		err  error
	}
	applyMsg struct {
		ch       <-chan tea.Msg
		progress *refresh.Progress
		results  []refresh.Result
		done     bool
	}
	tickMsg time.Time
)

// Update handles one message.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.layout()
		return m, nil
	case dataMsg:
		if msg.feed != m.feed {
			return m, nil // an earlier scope's last snapshot
		}
		return m, tea.Batch(m.onData(msg), m.feed.Next())
	case probeMsg:
		if msg.feed != m.feed {
			return m, nil
		}
		m.probeErr = msg.err
		if msg.err != nil {
			return m, m.feed.Probe(ProbeRetry)
		}
		return m, m.feed.Probe(ProbeInterval)
	case verifiedMsg:
		return m, m.onVerified(msg)
	case recheckMsg:
		for _, id := range msg.ids {
			m.queue[id] = true
		}
		return m, m.startVerify()
	case diffMsg:
		if msg.err != nil {
			m.setError("diff: %v", msg.err)
			return m, nil
		}
		m.diffTitle = "" // the diff names the consumer itself
		m.diffView.SetContent(msg.text)
		m.diffView.GotoTop()
		return m, nil
	case planMsg:
		m.planning = false
		if msg.err != nil {
			m.setError("refresh: %v", msg.err)
			m.screen = m.back
			return m, nil
		}
		m.plan = &msg.plan
		return m, nil
	case applyMsg:
		return m, m.onApply(msg)
	case switchedMsg:
		return m, m.onSwitched(msg)
	case tickMsg:
		m.now = m.opts.Now()
		m.refreshTables()
		return m, tick()
	case tea.KeyPressMsg:
		return m, m.onKey(msg)
	}
	return m, nil
}

func tick() tea.Cmd {
	return tea.Tick(time.Second, func(t time.Time) tea.Msg { return tickMsg(t) })
}

func (m *Model) onData(msg dataMsg) tea.Cmd {
	first := !m.watched
	m.watched = true
	m.snap, m.items, m.synced, m.errs, m.notes = msg.snap, msg.items, msg.synced, msg.errs, msg.notes
	m.now = msg.at
	if msg.err != nil {
		m.setError("%v", msg.err)
	}
	for _, c := range msg.changes {
		m.onEdit(c)
	}
	m.refreshTables()
	cmd := m.startVerify()
	if first {
		return tea.Batch(cmd, tick())
	}
	return cmd
}

// onEdit marks the hot-updating consumers of a changed object pending
// with the delay the kubelet is expected to take, and queues every
// consumer of the object for verification.
func (m *Model) onEdit(c Edit) {
	for _, it := range m.items {
		if it.Key() != c.Key || it.Pod.Name == "" || it.Container == nil {
			continue
		}
		id := it.ID()
		if it.Verdict == inspect.VerdictHotUpdate && it.Pod.Phase == string(corev1.PodRunning) {
			m.tracks[id] = newTrack(it, c)
			m.observed[id] = verification{State: inspect.StatePending, StateReason: "the object changed: waiting for the kubelet", At: c.Seen}
		} else {
			delete(m.observed, id)
		}
		m.queue[id] = true
	}
	m.status, m.statusErr = fmt.Sprintf("%s/%s changed at %s", strings.ToLower(c.Key.Kind), c.Key.Name, c.At.UTC().Format("15:04:05")), false
}

// startVerify runs the queued verifications as one batch, unless one runs.
func (m *Model) startVerify() tea.Cmd {
	if m.verifying || len(m.queue) == 0 || m.snap == nil {
		return nil
	}
	var batch []inspect.Use
	for _, it := range m.items {
		if m.queue[it.ID()] {
			batch = append(batch, it)
		}
	}
	m.queue = map[inspect.UseID]bool{}
	if len(batch) == 0 {
		return nil
	}
	m.verifying = true
	snap, actions, now, gen := m.snap, m.conn.Actions, m.opts.Now, m.gen
	return func() tea.Msg {
		out := actions.Verify(context.Background(), snap, batch)
		return verifiedMsg{items: out, at: now(), gen: gen}
	}
}

func (m *Model) onVerified(msg verifiedMsg) tea.Cmd {
	m.verifying = false
	if msg.gen != m.gen {
		return m.startVerify() // read in the context left since
	}
	var again []inspect.UseID
	interval := MaxRecheck
	for _, it := range msg.items {
		id := it.ID()
		if m.queue[id] {
			// queued again while this batch ran (e.g. the object changed
			// again): this result may predate the change, and the next batch
			// verifies the use anyway
			continue
		}
		o := verification{State: it.State, StateReason: it.StateReason, Cause: it.StateCause, Fix: it.StateFix, At: msg.at}
		if it.SyncedAt != nil {
			t := it.SyncedAt.Time
			o.SyncedAt = &t
		}
		m.observed[id] = o
		t := m.tracks[id]
		if t == nil && it.State == inspect.StatePending {
			// pending without a change seen here: follow it from the
			// object's last change
			t = newTrack(it, Edit{Key: it.Key(), At: lastChangeOf(it), Seen: msg.at})
			m.tracks[id] = t
		}
		if t != nil && t.record(o) {
			again = append(again, id)
			interval = min(interval, t.Interval)
		}
	}
	m.refreshTables()
	if strings.HasPrefix(m.status, "verifying ") && !m.statusErr {
		// the causes of a warning are on the status line already
		m.status = fmt.Sprintf("verified %d consumers at %s", len(msg.items), msg.at.Format("15:04:05")) + unverifiableSummary(msg.items, m.warningOf)
	}
	cmds := []tea.Cmd{m.startVerify()}
	if len(again) > 0 {
		cmds = append(cmds, tea.Tick(interval, func(time.Time) tea.Msg { return recheckMsg{ids: again} }))
	}
	return tea.Batch(cmds...)
}

func lastChangeOf(it inspect.Use) time.Time {
	if it.Object.LastChange == nil {
		return time.Time{}
	}
	return it.Object.LastChange.Time
}

// withVerified is the item with what the dashboard last observed.
func (m *Model) withVerified(it inspect.Use) inspect.Use {
	o, ok := m.observed[it.ID()]
	if !ok {
		return it
	}
	it.State, it.StateReason, it.StateCause, it.StateFix = o.State, o.StateReason, o.Cause, o.Fix
	if o.SyncedAt != nil {
		t := *o.SyncedAt
		it.SyncedAt = &metav1.Time{Time: t}
	}
	return it
}

func (m *Model) setError(format string, a ...any) {
	m.status, m.statusErr = fmt.Sprintf(format, a...), true
}

func (m *Model) onKey(msg tea.KeyPressMsg) tea.Cmd {
	k := msg.String()
	if k == "ctrl+c" {
		return m.quit()
	}
	if m.inputFor != "" {
		return m.onInputKey(msg)
	}
	switch m.screen {
	case helpScreen:
		if key.Matches(msg, m.keys.Quit) {
			return m.quit()
		}
		m.screen = m.back
		return nil
	case planScreen:
		return m.onPlanKey(msg)
	case diffScreen:
		switch {
		case key.Matches(msg, m.keys.Back):
			m.screen = consumersScreen
		case key.Matches(msg, m.keys.Quit):
			return m.quit()
		default:
			var cmd tea.Cmd
			m.diffView, cmd = m.diffView.Update(msg)
			return cmd
		}
		return nil
	}
	switch {
	case key.Matches(msg, m.keys.Quit):
		return m.quit()
	case key.Matches(msg, m.keys.Help):
		m.back, m.screen = m.screen, helpScreen
	case key.Matches(msg, m.keys.Back):
		if m.screen == consumersScreen {
			m.screen = objectsScreen
		} else if m.filter != "" {
			m.filter = ""
			m.refreshTables()
		}
	case key.Matches(msg, m.keys.Enter):
		if m.screen == objectsScreen {
			if r, ok := m.selectedObject(); ok {
				m.current = r.Key
				m.screen = consumersScreen
				m.useTable.SetCursor(0)
				m.refreshTables()
			}
		}
	case key.Matches(msg, m.keys.Filter):
		m.startInput("filter", m.filter)
	case key.Matches(msg, m.keys.Namespace):
		m.startInput("namespace", m.scope.Namespace)
	case key.Matches(msg, m.keys.Context):
		if len(m.opts.Contexts) > 1 {
			return m.switchTo(m.nextContext())
		}
		return m.switchTo(m.conn.Context)
	case key.Matches(msg, m.keys.PickContext):
		m.startInput("context", "")
	case key.Matches(msg, m.keys.Secrets):
		s := m.scope
		s.Secrets = !s.Secrets
		m.status, m.statusErr = map[bool]string{true: "showing Secrets (values are never shown)", false: "Secrets hidden"}[s.Secrets], false
		return m.watch(s)
	case key.Matches(msg, m.keys.Unused):
		if m.screen == objectsScreen {
			m.showUnused = !m.showUnused
			m.refreshTables()
		}
	case key.Matches(msg, m.keys.Mark):
		if r, ok := m.selectedObject(); ok && m.screen == objectsScreen {
			m.marked[r.Key] = !m.marked[r.Key]
			if !m.marked[r.Key] {
				delete(m.marked, r.Key)
			}
			m.objTable.MoveDown(1)
			m.refreshTables()
		}
	case key.Matches(msg, m.keys.Verify):
		return m.verifyNow()
	case key.Matches(msg, m.keys.Diff):
		return m.diffNow()
	case key.Matches(msg, m.keys.Refresh):
		return m.planNow()
	default:
		var cmd tea.Cmd
		if m.screen == objectsScreen {
			m.objTable, cmd = m.objTable.Update(msg)
		} else {
			m.useTable, cmd = m.useTable.Update(msg)
		}
		return cmd
	}
	return nil
}

func (m *Model) quit() tea.Cmd {
	m.quitting = true
	if m.feed != nil {
		m.feed.Stop()
	}
	return tea.Quit
}

func (m *Model) startInput(what, value string) {
	m.inputFor = what
	m.input.Reset()
	m.input.SetValue(value)
	m.input.CursorEnd()
	m.input.ShowSuggestions = false
	switch what {
	case "filter":
		m.input.Prompt = "/"
	case "context":
		m.input.Prompt = "context (tab completes): "
		m.input.SetSuggestions(m.opts.Contexts)
		m.input.ShowSuggestions = true
	default:
		m.input.Prompt = "namespace (empty: all): "
	}
	m.input.Focus()
}

func (m *Model) onInputKey(msg tea.KeyPressMsg) tea.Cmd {
	switch msg.String() {
	case "esc":
		m.inputFor = ""
		m.input.Blur()
		return nil
	case "enter":
		what, v := m.inputFor, strings.TrimSpace(m.input.Value())
		m.inputFor = ""
		m.input.Blur()
		switch what {
		case "filter":
			m.filter = v
			m.refreshTables()
			return nil
		case "context":
			return m.switchTo(v)
		}
		if strings.ContainsAny(v, " /") {
			m.setError("invalid namespace %q: use a namespace name, or nothing for all namespaces", v)
			return nil
		}
		s := m.scope
		s.Namespace = v
		if s.Narrowed() && v != m.scope.Namespace {
			// the arguments named objects and workloads of the namespace left
			s.Names, s.Workloads = nil, nil
			m.status, m.statusErr = "namespace changed: showing every object, not only those the arguments named", false
		}
		m.screen = objectsScreen
		return m.watch(s)
	}
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(msg)
	if m.inputFor == "filter" {
		m.filter = strings.TrimSpace(m.input.Value())
		m.refreshTables()
	}
	return cmd
}

// verifyNow verifies the consumers on screen: the marked objects or the
// selected one, or the consumers of the current object.
func (m *Model) verifyNow() tea.Cmd {
	keys := m.targetKeys()
	if len(keys) == 0 {
		return nil
	}
	want := map[inspect.ObjectKey]bool{}
	for _, k := range keys {
		want[k] = true
	}
	n := 0
	for _, it := range m.items {
		if want[it.Key()] && it.Pod.Name != "" && it.Container != nil {
			m.queue[it.ID()] = true
			n++
		}
	}
	m.status, m.statusErr = fmt.Sprintf("verifying %d consumers of %s", n, keysText(keys)), false
	return m.startVerify()
}

func (m *Model) diffNow() tea.Cmd {
	if m.screen != consumersScreen {
		m.setError("d shows the diff of one consumer: press enter on an object first")
		return nil
	}
	it, ok := m.selectedUse()
	if !ok || it.Container == nil || it.Pod.Name == "" {
		m.setError("no consumer selected")
		return nil
	}
	m.back, m.screen = consumersScreen, diffScreen
	m.diffTitle = "diff " + useLabel(it)
	m.diffView.SetContent("reading the container...")
	snap, actions := m.snap, m.conn.Actions
	title := m.diffTitle
	return func() tea.Msg {
		text, err := actions.Diff(context.Background(), snap, []inspect.Use{it})
		if err == nil && strings.TrimSpace(text) == "" {
			text = "no differences: the container has what the API has"
		}
		return diffMsg{title: title, text: text, err: err}
	}
}

func (m *Model) planNow() tea.Cmd {
	keys := m.targetKeys()
	if len(keys) == 0 || m.snap == nil {
		return nil
	}
	if m.applying {
		m.setError("a refresh is running: wait for its result")
		return nil
	}
	if !m.synced {
		m.setError("refresh: not planned: the watches have not synced yet (the header says syncing), and a plan from a partial cache would leave consumers out; press r again once it says live")
		return nil
	}
	m.back, m.screen = m.screen, planScreen
	m.plan, m.planning = nil, true
	snap, actions := m.snap, m.conn.Actions
	return func() tea.Msg {
		p, err := actions.Plan(context.Background(), snap, keys)
		p.Keys = keys
		return planMsg{plan: p, err: err}
	}
}

func (m *Model) onPlanKey(msg tea.KeyPressMsg) tea.Cmd {
	if m.planning || m.applying {
		if key.Matches(msg, m.keys.Quit) {
			if m.applying && !m.quitArmed {
				m.quitArmed = true
				m.setError("a refresh is being applied: press q again to quit anyway (what it changed stays changed, the rest is not done)")
				return nil
			}
			m.interrupted = m.applying
			return m.quit()
		}
		return nil
	}
	if m.plan == nil {
		m.screen = m.back
		return nil
	}
	switch msg.String() {
	case "y", "Y":
		m.applying = true
		m.progress = refresh.Progress{}
		plan, actions := *m.plan, m.conn.Actions
		ch := make(chan tea.Msg, 16)
		go func() {
			res := actions.Apply(context.Background(), plan, func(p refresh.Progress) {
				select {
				case ch <- applyMsg{progress: &p}:
				default: // the screen shows the next one
				}
			})
			ch <- applyMsg{results: res, done: true}
			close(ch)
		}()
		m.status, m.statusErr = "refresh: applying...", false
		return waitApply(ch)
	default:
		m.status, m.statusErr = fmt.Sprintf("refresh of %s declined: nothing was changed", keysText(m.plan.Keys)), false
		m.plan = nil
		m.screen = m.back
		return nil
	}
}

func waitApply(ch <-chan tea.Msg) tea.Cmd {
	return func() tea.Msg {
		msg, ok := <-ch
		if !ok {
			return nil
		}
		am := msg.(applyMsg)
		am.ch = ch
		return am
	}
}

func (m *Model) onApply(msg applyMsg) tea.Cmd {
	if !msg.done {
		if p := msg.progress; p != nil && p.Event != "" {
			m.status = "refresh: " + p.Event // an eviction
		} else if p != nil {
			m.progress = *p
			m.status = fmt.Sprintf("refresh: %d/%d current, %s elapsed", m.progress.Current, m.progress.Total, m.progress.Elapsed.Round(100*time.Millisecond))
		}
		return waitApply(msg.ch)
	}
	m.applying = false
	line, bad := render.ResultLine(msg.results)
	m.status, m.statusErr = line, bad
	keys := m.plan.Keys
	m.plan = nil
	m.screen = m.back
	// what the consumers the refresh changed have now
	want := map[inspect.ObjectKey]bool{}
	for _, k := range keys {
		want[k] = true
	}
	changed := changedPods(msg.results)
	for _, it := range m.items {
		if want[it.Key()] && it.Pod.Name != "" && it.Container != nil && changed(it) {
			m.queue[it.ID()] = true
		}
	}
	return m.startVerify()
}

// changedPods tells whether a use belongs to a pod the refresh changed: one
// it annotated or evicted, a replacement, or a pod of a workload it
// restarted (the rollout replaces them: their successors are new rows).
func changedPods(results []refresh.Result) func(inspect.Use) bool {
	pods := map[string]bool{}
	workloads := map[refresh.WorkloadKey]bool{}
	for _, r := range results {
		switch r.Outcome {
		case refresh.OutcomeApplied, refresh.OutcomeCurrent, refresh.OutcomeTimeout, refresh.OutcomeUnverifiable, refresh.OutcomeFailed:
		default:
			continue // nothing was sent
		}
		ns := r.Target.Namespace
		if r.Action.Action == refresh.ActionRestart {
			workloads[refresh.WorkloadKey{Kind: r.Target.Kind, Namespace: ns, Name: r.Target.Name}] = true
		}
		for _, group := range [][]string{r.Pods, r.Evicted, r.Replacements} {
			for _, p := range group {
				pods[refresh.PodKey(ns, p)] = true
			}
		}
	}
	return func(it inspect.Use) bool {
		return pods[refresh.PodKey(it.Object.Namespace, it.Pod.Name)] ||
			workloads[refresh.WorkloadKey{Kind: it.Workload.GroupKind(), Namespace: it.Object.Namespace, Name: it.Workload.Name}]
	}
}

// targetKeys are the objects an action applies to.
func (m *Model) targetKeys() []inspect.ObjectKey {
	if m.screen == consumersScreen {
		return []inspect.ObjectKey{m.current}
	}
	if len(m.marked) > 0 {
		var keys []inspect.ObjectKey
		for k := range m.marked {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return keyText(keys[i]) < keyText(keys[j]) })
		return keys
	}
	if r, ok := m.selectedObject(); ok {
		return []inspect.ObjectKey{r.Key}
	}
	return nil
}

func keyText(k inspect.ObjectKey) string {
	return k.Namespace + "/" + strings.ToLower(k.Kind) + "/" + k.Name
}

func keysText(keys []inspect.ObjectKey) string {
	var s []string
	for _, k := range keys {
		s = append(s, strings.ToLower(k.Kind)+"/"+k.Name)
	}
	if len(s) > 3 {
		return strings.Join(s[:3], ", ") + fmt.Sprintf(" and %d more", len(s)-3)
	}
	return strings.Join(s, ", ")
}

func (m *Model) selectedObject() (objectRow, bool) {
	i := m.objTable.Cursor()
	if i < 0 || i >= len(m.objects) {
		return objectRow{}, false
	}
	return m.objects[i], true
}

func (m *Model) selectedUse() (inspect.Use, bool) {
	i := m.useTable.Cursor()
	if i < 0 || i >= len(m.uses) {
		return inspect.Use{}, false
	}
	return m.uses[i], true
}

func useLabel(it inspect.Use) string {
	s := fmt.Sprintf("pod/%s container %s %s", it.Pod.Name, it.ContainerName(), it.Mode)
	switch {
	case it.Volume != nil:
		s += " " + it.Volume.MountPath
	case it.EnvName != "":
		s += " " + it.EnvName
	}
	return text.Printable(s + " of " + strings.ToLower(it.Object.Kind) + "/" + it.Object.Name)
}

// unverifiableSummary names, for the status line, how many consumers could
// not be verified and why, in the words of the STATE column of status
// --verify ("; 2 unverifiable: forbidden: create pods/exec"); the most
// frequent reason first, "and N more" for the others. Those of a warning
// (grouped: warningOf) are left to it.
func unverifiableSummary(items []inspect.Use, grouped map[inspect.UseID]int) string {
	count := map[string]int{}
	var reasons []string
	n := 0
	for _, it := range items {
		if it.State != inspect.StateUnverifiable || grouped[it.ID()] > 0 {
			continue
		}
		n++
		r := inspect.ShortReason(it.StateReason)
		if count[r] == 0 {
			reasons = append(reasons, r)
		}
		count[r]++
	}
	if n == 0 {
		return ""
	}
	sort.SliceStable(reasons, func(i, j int) bool { return count[reasons[i]] > count[reasons[j]] })
	s := fmt.Sprintf("; %d unverifiable: %s", n, reasons[0])
	if len(reasons) > 1 {
		s += fmt.Sprintf(" (and %d other reasons)", len(reasons)-1)
	}
	return s
}
