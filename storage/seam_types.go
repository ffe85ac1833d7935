package storage

import (
	"fmt"
	"strings"
)

// Merged is a changes file applied by MergeDeferred whose checks and log
// wait for FinishMerged.
type Merged struct {
	DatasetID string
	Version   int
	File      string
	Deleted   int64 // rows the MERGE deleted: the file's changed and removed rows, if it fits
	Inserted  int64 // rows the INSERT added: its added and changed rows
	Rows      int64 // the table's row count after, if the file fits
}

// byFile reads columns of files whose schemas may differ (other
// datasets'), by name and as VARCHAR, with each row's file in
// zz_ploti_file.
func ByFile(files []string, cols ...string) string {
	var sel strings.Builder
	for _, c := range cols {
		fmt.Fprintf(&sel, "CAST(%[1]s AS VARCHAR) AS %[1]s, ", Ident(c))
	}
	return fmt.Sprintf("(SELECT %szz_ploti_file FROM read_parquet(%s, hive_partitioning = false, union_by_name = true, filename = 'zz_ploti_file'))",
		sel.String(), FileList(files))
}
