package shadow

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Cap appends lines to a record (JSON lines, one a row) and drops its
// oldest lines until it fits in max bytes; it returns the record and how
// many lines it dropped. A line longer than max on its own is dropped too.
func Cap(record string, lines []string, max int) (string, int) {
	all := splitLines(record)
	all = append(all, lines...)
	size := 0
	for _, l := range all {
		size += len(l) + 1
	}
	dropped := 0
	for len(all) > 0 && size > max {
		size -= len(all[0]) + 1
		all = all[1:]
		dropped++
	}
	if len(all) == 0 {
		return "", dropped
	}
	return strings.Join(all, "\n") + "\n", dropped
}

func splitLines(s string) []string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

// Lines are the rows as JSON lines.
func Lines(rows []Row) ([]string, error) {
	var out []string
	for _, r := range rows {
		b, err := json.Marshal(r)
		if err != nil {
			return nil, err
		}
		out = append(out, string(b))
	}
	return out, nil
}

// ParseRecord reads the rows of a record; a line that is not a row (a
// newer format) is counted, not fatal.
func ParseRecord(record string) (rows []Row, unreadable int) {
	for _, l := range splitLines(record) {
		var r Row
		d := json.NewDecoder(bytes.NewReader([]byte(l)))
		if err := d.Decode(&r); err != nil || r.Object.Name == "" {
			unreadable++
			continue
		}
		rows = append(rows, r)
	}
	return rows, unreadable
}
