package storage

import (
	"fmt"
	"slices"
	"strings"
)

// The change log in both engines (migration 9; docs/decisions.md 104):
// _ploti.change_sets holds a row per dataset and version the log holds,
// numbered by set_id, and _ploti.change_rows a row per logged record
// naming its set, with the kind of change an ENUM (on PostgreSQL the named
// type _ploti.change_kind).
// _ploti.changes, what readers query, is a view joining the two, with the
// columns the table had (dataset_id, version, record_id, change).
// Writers add a version's set first (ChangeSetsSQL, OneChangeSetSQL), then
// its rows under its set_id (ChangeSetOf, or a join on change_sets).

// ChangeSetsSQL adds to _ploti.change_sets the sets of rel (a relation
// with the columns dataset_id and version; others are ignored) that it
// lacks, numbered after the highest set_id. The writer's transaction is
// the only one that adds sets, so the numbers do not collide.
func ChangeSetsSQL(rel string) string {
	return `INSERT INTO _ploti.change_sets (set_id, dataset_id, version)
		SELECT (SELECT coalesce(max(set_id), 0) FROM _ploti.change_sets) + row_number() OVER (ORDER BY n.dataset_id, n.version), n.dataset_id, n.version
		FROM (SELECT DISTINCT dataset_id, version FROM ` + rel + `) n
		WHERE NOT EXISTS (SELECT 1 FROM _ploti.change_sets s WHERE s.dataset_id = n.dataset_id AND s.version = n.version)`
}

// OneChangeSetSQL adds datasetID's version to _ploti.change_sets unless
// it is there, numbered after the highest set_id: ChangeSetsSQL for one
// set, in one pass over the sets and without a window (0.6 ms against
// 1.3–2.6 ms beside 20,000 sets, a probe on DuckDB). Written with
// literals, so that it takes no parameter on either engine.
func OneChangeSetSQL(datasetID string, version int) string {
	ds := Literal(datasetID)
	return fmt.Sprintf(`INSERT INTO _ploti.change_sets (set_id, dataset_id, version)
		SELECT coalesce(max(set_id), 0) + 1, %[1]s, %[2]d FROM _ploti.change_sets
		HAVING NOT coalesce(bool_or(dataset_id = %[1]s AND version = %[2]d), false)`, ds, version)
}

// ChangeSetOf is a scalar subquery of the set_id of datasetID's version,
// for a statement that logs rows of one set after OneChangeSetSQL added it.
func ChangeSetOf(datasetID string, version int) string {
	return fmt.Sprintf("(SELECT set_id FROM _ploti.change_sets WHERE dataset_id = %s AND version = %d)", Literal(datasetID), version)
}

// LogOneSetSQL is the statements that log datasetID's version: its set,
// then its rows, selected by "SELECT <its set_id>, " + rows (rows names
// the record id and the change, then the FROM clause and what follows).
// On PostgreSQL the change must be cast to _ploti.change_kind; DuckDB
// casts a VARCHAR on insert.
func LogOneSetSQL(datasetID string, version int, rows string) []string {
	return []string{
		OneChangeSetSQL(datasetID, version),
		fmt.Sprintf(`INSERT INTO _ploti.change_rows (set_id, record_id, change) SELECT %s, %s`, ChangeSetOf(datasetID, version), rows),
	}
}

// VersionSetsSQL adds the sets of datasetID's versions that
// _ploti.change_sets lacks, with literals (it takes no parameter on either
// engine): one version, the most common (a watch sync of one new
// version), by OneChangeSetSQL; more by ChangeSetsSQL over their list.
// versions must not be empty.
func VersionSetsSQL(datasetID string, versions []int32) string {
	distinct := slices.Compact(slices.Sorted(slices.Values(versions)))
	if len(distinct) == 1 {
		return OneChangeSetSQL(datasetID, int(distinct[0]))
	}
	rows := make([]string, len(distinct))
	for i, v := range distinct {
		rows[i] = fmt.Sprintf("(%s, %d)", Literal(datasetID), v)
	}
	return ChangeSetsSQL("(VALUES " + strings.Join(rows, ", ") + ") n(dataset_id, version)")
}

// LogRowsSQL logs the rows of rel, a relation aliased l with the columns
// dataset_id, version, id and change, under the sets of their versions,
// which VersionSetsSQL added first. change is the change's expression
// (PostgreSQL casts l.change to _ploti.change_kind).
func LogRowsSQL(rel, change string) string {
	return `INSERT INTO _ploti.change_rows (set_id, record_id, change)
		SELECT s.set_id, l.id, ` + change + ` FROM ` + rel + ` JOIN _ploti.change_sets s ON s.dataset_id = l.dataset_id AND s.version = l.version`
}
