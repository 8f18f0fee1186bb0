// Package render turns what cmsync found and did into the words and
// columns people read, one renderer per resource, for the CLI and the
// dashboard alike. A table renderer (Uses, Actions, Results) holds its
// resources and gives a Header and Rows of escaped cells (the Table
// interface): PrintTable prints it with kubectl's tab writer, and the
// dashboard shows the same header and rows in its tables. Event (a watch
// event as one line) and Diff (comparisons as unified diffs) are not tables.
package render
