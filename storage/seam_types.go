package storage

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

// MergeStats counts what a changes file did.
type MergeStats struct {
	Added, Changed, Removed int64
	Rows                    int64 // the table's row count after the merge
}

// IDRef names a user table column that holds record ids of a dataset, to be
// rewritten when the dataset's ids are replaced.
type IDRef struct {
	Table, Column, DatasetID string
}
