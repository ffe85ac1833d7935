// Package apply decides and carries out what one feed event does to one
// dataset.
//
// Decide is pure: a dataset's State and an event in, an Action out, by the
// rules of Ploti's feed-events.txt and schemas-and-holds.txt:
//
//	not a feed event (ping, dataset.changed …)      → skip
//	added, version set                              → load that snapshot (replacing rows)
//	added, version null                             → pending
//	dataset removed                                 → skip until added again
//	409/404 from links.version seen                 → skip until its removed
//	updated/resync_required/schema_changed ≤ held   → skip (replay rule, checked first)
//	locally held for review                         → skip (release reloads from current)
//	updated, previousVersion = held                 → merge its changes
//	updated, any other previousVersion              → reload from the current version
//	resync_required                                 → load that snapshot (+ id map)
//	schema_changed MINOR                            → add the columns, version not held
//	schema_changed MAJOR                            → hold for review (or skip under "reload")
//	removed / stale / delayed                       → record state only
//
// Executor carries an action out against storage: it asks its Source (the
// replica's API client) for the version and the local paths of its verified
// files, and commits the table change, the registry row, the holds and the
// event id in one transaction. apply knows nothing of HTTP, nor of the
// engine that holds the tables: it moves rows only through the
// transaction's storage.Tables (load a snapshot or rows, merge changes,
// add columns, apply an id map), the seam that the DuckDB file and a
// PostgreSQL database each implement.
//
// Outside the walk, Prepare gets a snapshot load ready with API calls and
// downloads only (a bootstrap prepares many at once, ahead of DuckDB), and
// LoadPrepared loads several in one transaction, each again on its own if
// that fails. A Source that is also a Streamer hands over a large
// snapshot while it downloads: the load reads its row groups as they
// arrive (storage.StreamLoader, the DuckDB file only), and if it fails,
// rolls back and loads the file downloaded whole. A swap that replaces a table checkpoints once swaps have
// freed enough for the file to grow by an eighth (swapped).
//
// The walk hands Apply a Batch for a page, and for the pages it reads ahead
// after it (Widen). State-only actions and skips join
// it: the batch reads the registry and the holds once, keeps the rows it
// changes and the event ids it records, and writes them in its transaction
// at Flush, together with the cursor after the last page it holds whole
// (SetCursor). With Batch.Share set, a merge
// of small changes files joins it too (its table change, registry row and
// event id are written in the batch's transaction); if it fails there, Apply
// returns ErrRetryPage and the walk applies its uncommitted pages again
// without Share.
// Other heavy actions (loads, larger merges) flush the batch first and
// commit on their own; the batch then keeps the row they wrote. (A DuckDB
// statement costs a few hundred microseconds, a commit a few milliseconds;
// statements per event, not rows, bound how fast a log of small events is
// walked.)
package apply
