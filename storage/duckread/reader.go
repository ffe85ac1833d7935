package duckread

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
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

// FileError names the file(s) in a read error.
func FileError(files []string, err error) error {
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = filepath.Base(f)
	}
	return fmt.Errorf("read %s: %w", strings.Join(names, ", "), err)
}

func BaseNames(files []string) string {
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = filepath.Base(f)
	}
	return strings.Join(names, ", ")
}

// CheckColumns makes sure a file has every column the table needs; extra
// lists the further columns the file may carry.
func CheckColumns(have []string, cols []ploti.Column, extra ...string) error {
	set := map[string]bool{}
	for _, c := range have {
		set[c] = true
	}
	var missing []string
	need := append([]string{storage.ColRecordID, storage.ColPlaceID}, extra...)
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

// ColumnsFromFile is the fallback when no schema is known: every column the
// file has but the system ones, typed as DuckDB reads them.
func ColumnsFromFile(have []string) []ploti.Column {
	var cols []ploti.Column
	for _, c := range have {
		if c == storage.ColRecordID || c == storage.ColPlaceID || c == storage.ColChange {
			continue
		}
		cols = append(cols, ploti.Column{Name: c, Type: ploti.Type{Type: ""}})
	}
	return cols
}

// FitMark starts the merge's own errors, to tell them from DuckDB's.
const FitMark = "ploti: "

// FileIDsSQL is a query of a changes file's record ids and kinds of
// change, from src, a read_parquet call.
func FileIDsSQL(src string) string {
	return fmt.Sprintf("(SELECT CAST(%[1]s AS VARCHAR) AS %[1]s, CAST(%[2]s AS VARCHAR) AS %[2]s FROM %[3]s)", storage.Ident(storage.ColRecordID), storage.Ident(storage.ColChange), src)
}

// ChangesIDsSQL is fileIDsSQL for a file whose column types are known:
// without the casts when both columns are VARCHAR already (the
// casts cost a small merge's MERGE 0.4–1.1 ms).
func ChangesIDsSQL(src string, types map[string]string) string {
	if types[storage.ColRecordID] != "VARCHAR" || types[storage.ColChange] != "VARCHAR" {
		return FileIDsSQL(src)
	}
	return fmt.Sprintf("(SELECT %s, %s FROM %s)", storage.Ident(storage.ColRecordID), storage.Ident(storage.ColChange), src)
}

// ChangeIn is a condition that a changes file's kind of change is one of
// kinds (SQL literals).
func ChangeIn(types map[string]string, kinds string) string {
	if types[storage.ColChange] == "VARCHAR" {
		return storage.Ident(storage.ColChange) + " IN (" + kinds + ")"
	}
	return "CAST(" + storage.Ident(storage.ColChange) + " AS VARCHAR) IN (" + kinds + ")"
}

// FileFaults refuses a changes file with null or repeated record ids or
// unknown kinds of change.
func FileFaults(name string, nulls, dups, bad int64) error {
	switch {
	case nulls > 0 || dups > 0:
		return &storage.DataError{File: name, Detail: fmt.Sprintf("changes file has %d null and %d duplicate _ploti_record_id values", nulls, dups)}
	case bad > 0:
		return &storage.DataError{File: name, Detail: fmt.Sprintf("changes file has %d rows whose _ploti_change is not added, changed or removed", bad)}
	}
	return nil
}

// ByFile reads columns of files whose schemas may differ (other
// datasets'), by name and as VARCHAR, with each row's file in
// zz_ploti_file. One file's name is a constant, with no filename column
// of DuckDB's to fill a row at a time.
func ByFile(files []string, cols ...string) string {
	var sel strings.Builder
	for _, c := range cols {
		fmt.Fprintf(&sel, "CAST(%[1]s AS VARCHAR) AS %[1]s, ", storage.Ident(c))
	}
	if len(files) == 1 {
		return fmt.Sprintf("(SELECT %s%s AS zz_ploti_file FROM read_parquet(%s, hive_partitioning = false))",
			sel.String(), storage.Literal(files[0]), FileList(files))
	}
	return fmt.Sprintf("(SELECT %szz_ploti_file FROM read_parquet(%s, hive_partitioning = false, union_by_name = true, filename = 'zz_ploti_file'))",
		sel.String(), FileList(files))
}
