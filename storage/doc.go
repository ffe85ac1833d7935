// Package storage is a replica's storage as every engine keeps it: the
// _ploti registry and its rules (datasets, holds, applied events, id maps,
// changes, inbox, runs, attachments, marks), the dataset tables' names, and
// the transactions in which a snapshot swap or a changes merge commits
// together with its registry row.
//
// Engines keep the replica: the DuckDB file (storage/duckdb) and a
// PostgreSQL/PostGIS database (storage/postgres), siblings behind Engine
// (engine.go). The seam is Tables (seam.go), the table operations, which
// each engine's transaction implements; the registry's statements are the
// same for both, run through database/sql on the engine's Engine, with
// the few that differ in its Dialect (dialect.go). What only some engines
// can do (history, marks, publish, streamed loads, checkpoints, the status
// summary) is a capability (capabilities.go) asserted on the engine, never
// asked by its name. storage/backends picks the engine from a --db value;
// docs/decisions.md 48 says why the cut is there.
//
// Both engines read Ploti's files with DuckDB, through storage/duckread:
// the select lists, casts, checks and refusals of a downloaded Parquet or
// NDJSON file, and the connector every DuckDB of the engines opens with,
// so that both refuse the same files in the same words. Bulk data moves
// with DuckDB's own read_parquet and read_json, never row by row through
// Go.
//
// The _ploti schema (migration 9; migration 2 stores _ploti.changes.record_id
// uncompressed, for faster checkpoints of a merge's log; migration 3 adds
// datasets.source, 'renamed' changes and the inbox, for watched datasets;
// migration 4 the attachments; migration 5 the commit log; migration 6 the
// settings; migration 7 the marks; migration 8 the history's ends and
// versions, and the schemas history and _ploti_history, see storage/duckdb's history.go;
// migration 9 makes _ploti.changes a view over change_sets and change_rows,
// see changesets.go):
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
//	_ploti.changes(dataset_id, version, record_id, change)   -- a view: all versions, or the latest N (PruneChanges);
//	                                                           -- change: added, changed, removed, renamed (watches)
//	_ploti.change_sets(set_id, dataset_id, version)          -- what the view reads: a row a logged version,
//	_ploti.change_rows(set_id, record_id, change)            -- a row a logged record (change an ENUM)
//	_ploti.inbox(event_id, type, occurred_at, received_at, request_id, url, data)
//	_ploti.sync_runs(run_id, started_at, finished_at, result, error, ...)
//	_ploti.attachments(dataset_id, version, name, content_type, bytes, sha256,
//	    content, path, fetched_at)             -- content BLOB, or path beside the file
//	_ploti.attachment_syncs(dataset_id, version, synced_at, error)
//	_ploti.commit_log(seq, token, prev, committed_at)   -- each commit's link (storage/duckdb's walcheck.go)
//	_ploti.settings(name, value)   -- geometry: geometry or wkb (Options.Geometry)
//	_ploti.marks(name, dataset_id, version, "at")  -- what a named consumer has seen
//	_ploti.history_ends(dataset_id, record_id, valid_to, valid_to_at)
//	_ploti.history_versions(dataset_id, source, version, published_at, recorded_at, kind)
//	_ploti.schema_migrations(version, applied_at)
//
// Geometry columns are DuckDB's GEOMETRY, or standard WKB in a BLOB when
// a file's geometry setting is wkb, or PostGIS's geometry in a database;
// each geometry column carries its CRS in its comment (GeometryComment).
//
// status is one of pending, current, held, removed, failed; a hold's kind is
// server (feed.dataset.delayed) or local (a MAJOR schema change under
// review).
package storage
