package storage

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/ploti-replica/ploti-replica/ploti"
)

// SourceColumns lists the columns of src, a DuckDB relation (a read_parquet
// or read_json call) read through q, in order, with the DuckDB type each is
// read as: what a load checks a file against its schema with.
func SourceColumns(ctx context.Context, q interface {
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
}, src string) ([]string, map[string]string, error) {
	rows, err := q.QueryContext(ctx, "SELECT * FROM "+src+" LIMIT 0")
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	types, err := rows.ColumnTypes()
	if err != nil {
		return nil, nil, err
	}
	names := make([]string, len(types))
	byName := make(map[string]string, len(types))
	for i, t := range types {
		names[i] = t.Name()
		byName[t.Name()] = t.DatabaseTypeName()
	}
	return names, byName, nil
}

// fileError names the file(s) in a read error.
func FileError(files []string, err error) error {
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = filepath.Base(f)
	}
	return fmt.Errorf("read %s: %w", strings.Join(names, ", "), err)
}

func baseNames(files []string) string {
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = filepath.Base(f)
	}
	return strings.Join(names, ", ")
}

// checkColumns makes sure a file has every column the table needs; extra
// lists the further columns the file may carry.
func checkColumns(have []string, cols []ploti.Column, extra ...string) error {
	set := map[string]bool{}
	for _, c := range have {
		set[c] = true
	}
	var missing []string
	need := append([]string{ColRecordID, ColPlaceID}, extra...)
	for _, c := range cols {
		need = append(need, c.Name)
	}
	for _, n := range need {
		if !set[n] {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("lacks column(s) %s the schema names", strings.Join(missing, ", "))
	}
	return nil
}

// columnsFromFile is the fallback when no schema is known: every column the
// file has but the system ones, typed as DuckDB reads them.
func columnsFromFile(have []string) []ploti.Column {
	var cols []ploti.Column
	for _, c := range have {
		if c == ColRecordID || c == ColPlaceID || c == ColChange {
			continue
		}
		cols = append(cols, ploti.Column{Name: c, Type: ploti.Type{Type: ""}})
	}
	return cols
}

// fitMark starts the merge's own errors, to tell them from DuckDB's.
const fitMark = "ploti: "

// fileIDsSQL is a query of a changes file's record ids and kinds of
// change, from src, a read_parquet call.
func fileIDsSQL(src string) string {
	return fmt.Sprintf("(SELECT CAST(%[1]s AS VARCHAR) AS %[1]s, CAST(%[2]s AS VARCHAR) AS %[2]s FROM %[3]s)", Ident(ColRecordID), Ident(ColChange), src)
}

// changesIDsSQL is fileIDsSQL for a file whose column types are known:
// without the casts when both columns are VARCHAR already (issue 18: the
// casts cost a small merge's MERGE 0.4–1.1 ms).
func ChangesIDsSQL(src string, types map[string]string) string {
	if types[ColRecordID] != "VARCHAR" || types[ColChange] != "VARCHAR" {
		return fileIDsSQL(src)
	}
	return fmt.Sprintf("(SELECT %s, %s FROM %s)", Ident(ColRecordID), Ident(ColChange), src)
}

// changeIn is a condition that a changes file's kind of change is one of
// kinds (SQL literals).
func ChangeIn(types map[string]string, kinds string) string {
	if types[ColChange] == "VARCHAR" {
		return Ident(ColChange) + " IN (" + kinds + ")"
	}
	return "CAST(" + Ident(ColChange) + " AS VARCHAR) IN (" + kinds + ")"
}

// MergeStats counts what a changes file did.
type MergeStats struct {
	Added, Changed, Removed int64
	Rows                    int64 // the table's row count after the merge
}

// fileFaults refuses a changes file with null or repeated record ids or
// unknown kinds of change.
func fileFaults(name string, nulls, dups, bad int64) error {
	switch {
	case nulls > 0 || dups > 0:
		return &DataError{File: name, Detail: fmt.Sprintf("changes file has %d null and %d duplicate _ploti_record_id values", nulls, dups)}
	case bad > 0:
		return &DataError{File: name, Detail: fmt.Sprintf("changes file has %d rows whose _ploti_change is not added, changed or removed", bad)}
	}
	return nil
}

// IDRef names a user table column that holds record ids of a dataset, to be
// rewritten when the dataset's ids are replaced.
type IDRef struct {
	Table, Column, DatasetID string
}
