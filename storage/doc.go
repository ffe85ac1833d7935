// Package storage owns the DuckDB file: opening and locking it, the _ploti
// metadata schema and its migrations, dataset table names, the mapping from
// Ploti column types to DuckDB types, and the transactions in which a
// snapshot swap or a changes merge commits together with its registry row.
//
// It is the only package that imports the DuckDB driver. Bulk data moves
// with DuckDB's own read_parquet, and a watched dataset's rows (JSON,
// spooled as NDJSON) with its read_json (rows.go), never row by row
// through Go.
//
// The _ploti schema (migration 8; migration 2 stores _ploti.changes.record_id
// uncompressed, for faster checkpoints of a merge's log; migration 3 adds
// datasets.source, 'renamed' changes and the inbox, for watched datasets;
// migration 4 the attachments; migration 5 the commit log; migration 6 the
// settings; migration 7 the marks; migration 8 the history's ends and
// versions, and the schemas history and _ploti_history, see history.go):
//
//	_ploti.subscription(subscription_id, api_url, cursor, last_sync_at, manifest_at)
//	_ploti.datasets(dataset_id, table_name, title, place_id, topic, version,
//	    previous_version, schema_version, key_columns, row_count, status,
//	    status_reason, updated_at, columns, skip_until_removed,
//	    stale_last_checked_at, stale_next_check_by, last_error, failed_at,
//	    source)                                                  -- feed or watch
//	_ploti.holds(dataset_id, version, kind, reason, since, detail)
//	_ploti.applied_events(event_id, applied_at)
//	_ploti.id_map(dataset_id, version, from_id, to_id)
//	_ploti.changes(dataset_id, version, record_id, change)   -- all versions, or the latest N (PruneChanges);
//	                                                           -- change: added, changed, removed, renamed (watches)
//	_ploti.inbox(event_id, type, occurred_at, received_at, request_id, url, data)
//	_ploti.sync_runs(run_id, started_at, finished_at, result, error, ...)
//	_ploti.attachments(dataset_id, version, name, content_type, bytes, sha256,
//	    content, path, fetched_at)             -- content BLOB, or path beside the file
//	_ploti.attachment_syncs(dataset_id, version, synced_at, error)
//	_ploti.commit_log(seq, token, prev, committed_at)   -- each commit's link (walcheck.go)
//	_ploti.settings(name, value)   -- geometry: geometry or wkb (Options.Geometry)
//	_ploti.marks(name, dataset_id, version, "at")  -- what a named consumer has seen
//	_ploti.history_ends(dataset_id, record_id, valid_to, valid_to_at)
//	_ploti.history_versions(dataset_id, source, version, published_at, recorded_at, kind)
//	_ploti.schema_migrations(version, applied_at)
//
// Geometry columns are DuckDB's GEOMETRY, or standard WKB in a BLOB when
// the file's geometry setting is wkb (geometry.go): every statement that
// writes a dataset table goes through storedType and stored, and each
// geometry column carries its CRS in its comment (GeometryComment).
//
// A writer's clean close keeps the file's status beside it, stamped with
// the file's state, for readers that need not open the file (summary.go,
// docs/decisions.md 51).
//
// Another engine can hold a replica (storage/postgres: PostgreSQL with
// PostGIS). The seam is Tables (seam.go), the table operations, which the
// DuckDB file's Tx and the other engine's transaction each implement;
// the registry's statements are the same for both, run through
// database/sql on the other engine's Backend (backend.go), with the few
// that differ in dialect.go. storage/backends picks the engine from a
// --db value. docs/decisions.md 48 says why the cut is there.
//
// status is one of pending, current, held, removed, failed; a hold's kind is
// server (feed.dataset.delayed) or local (a MAJOR schema change under
// review).
package storage
