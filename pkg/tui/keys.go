package tui

import (
	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/table"
)

// keyMap are the dashboard's keys, after k9s.
type keyMap struct {
	Up, Down, Enter, Back, Filter, Help, Quit key.Binding
	Verify, Refresh, Diff, Secrets, Namespace key.Binding
	Unused, Mark                              key.Binding
	Context, PickContext                      key.Binding
}

func newKeyMap() keyMap {
	return keyMap{
		Up:          key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:        key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		Enter:       key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "consumers")),
		Back:        key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back")),
		Filter:      key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "filter")),
		Help:        key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Quit:        key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
		Verify:      key.NewBinding(key.WithKeys("v"), key.WithHelp("v", "verify")),
		Refresh:     key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "refresh")),
		Diff:        key.NewBinding(key.WithKeys("d"), key.WithHelp("d", "diff")),
		Secrets:     key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "secrets")),
		Namespace:   key.NewBinding(key.WithKeys("n"), key.WithHelp("n", "namespace")),
		Unused:      key.NewBinding(key.WithKeys("u"), key.WithHelp("u", "unused")),
		Mark:        key.NewBinding(key.WithKeys("space"), key.WithHelp("space", "mark")),
		Context:     key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "next context")),
		PickContext: key.NewBinding(key.WithKeys("C"), key.WithHelp("C", "pick a context")),
	}
}

// ShortHelp is the help bar.
func (k keyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.Enter, k.Back, k.Verify, k.Refresh, k.Diff, k.Filter, k.Help, k.Quit}
}

// FullHelp is the `?` screen.
func (k keyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{k.Up, k.Down, k.Enter, k.Back, k.Filter},
		{k.Verify, k.Refresh, k.Diff, k.Mark},
		{k.Secrets, k.Unused, k.Namespace, k.Context, k.PickContext},
		{k.Help, k.Quit},
	}
}

// tableKeys move the cursor; d and u are the dashboard's, not half pages.
func tableKeys() table.KeyMap {
	return table.KeyMap{
		LineUp:       key.NewBinding(key.WithKeys("up", "k")),
		LineDown:     key.NewBinding(key.WithKeys("down", "j")),
		PageUp:       key.NewBinding(key.WithKeys("pgup", "b")),
		PageDown:     key.NewBinding(key.WithKeys("pgdown", "f")),
		HalfPageUp:   key.NewBinding(key.WithKeys("ctrl+u")),
		HalfPageDown: key.NewBinding(key.WithKeys("ctrl+d")),
		GotoTop:      key.NewBinding(key.WithKeys("home", "g")),
		GotoBottom:   key.NewBinding(key.WithKeys("end", "G")),
	}
}
