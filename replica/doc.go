// Package replica keeps a local DuckDB file current with a Ploti Data Feeds
// subscription: one table per dataset, always at a released version, never
// half-applied.
//
//	r, err := replica.Open(ctx, "feeds.duckdb", replica.Options{APIKey: key, SubscriptionID: "sub_1"})
//	res, err := r.Sync(ctx)    // bootstrap or catch up
//	rows, err := r.DB().QueryContext(ctx, "SELECT * FROM ds_fl_orange_permits")
//	st, err := r.Status(ctx)   // versions, statuses, holds, cursor
//	err = r.Release(ctx, "ds_x") // end a review hold: reload from current
//	err = r.Close()
//
// Open takes a postgres:// URL instead of a path to keep the replica in a
// PostgreSQL/PostGIS database (storage/postgres): the same tables, _ploti
// state and rules; r.DB() is then a database/sql handle on it.
//
// r.DB() is the writer's handle: a service may keep tables of its own on
// it, beside the replica's. r.ReadOnly() is a handle for queries that
// must not write (a service's users' SQL): each query runs in a read-only
// transaction, sees whole versions only, and a write fails with
// ErrReadOnly. In a DuckDB file it takes one SELECT-like statement per
// query. The process that holds a Replica of a file cannot open the file
// again (OpenReader's ErrLocked, and DuckDB refuses an application's own
// sql.Open("duckdb", path) with "different configuration than existing
// connections"): query it through ReadOnly() or DB().
//
// r.QueryArrow reads a query's rows as Arrow record batches (duckdb-go's,
// github.com/apache/arrow-go/v18), with ReadOnly()'s rules, from a
// DuckDB file only; it exists only in a build with -tags duckdb_arrow,
// which turns on duckdb-go's Arrow interface.
//
// The walk (Sync):
//
//	if no cursor:                           bootstrap
//	else:                                   rebuilt (load from a fresh manifest the datasets
//	                                        it listed as rebuilding), repair (reload failed
//	                                        datasets from current), catch up from the
//	                                        manifest (under the rate limit, see below)
//	loop:
//	    page := events after cursor (limit 500)
//	    410 expired:                        bootstrap, continue
//	    400 invalid_input:                  ErrForeignCursor
//	    no events:                          done
//	    for each event not yet applied:     apply.Decide + Execute
//	        loads and merges commit alone, with their event id and registry row;
//	        state-only events share the page's transaction
//	    commit nextCursor with the page's bookkeeping
//
//	bootstrap:
//	    manifest := GET manifest
//	    titles, places, topics := GET datasets?subscription= (200 a page; no call per dataset)
//	    for each listed dataset not already at that version, in order:
//	        prefetch (Options.Prefetch at once, within Options.SpoolLimit):
//	            its schema and snapshot files into the spool; a snapshot of
//	            one file of Options.StreamMin or more whose link serves
//	            ranges is ready once its footer is there, and loads, alone,
//	            as its row groups arrive (apply.Streamer)
//	        load: the ready ones, up to 64 MiB, in one transaction with their
//	            registry rows; if it fails, each again in one of its own
//	    unavailable: pending (rebuilding ones: the next sync asks the manifest again)
//	    held datasets no longer listed: removed
//	    cursor := manifest.eventCursor
//
// Under the client's rate limit, a sync with a cursor reads the log ahead
// (up to 40 pages, kept for the walk) and, when the walk would need more
// calls than the limiter's burst, loads the datasets the log moves past
// with updates only from one manifest call (catchUpFromManifest); the
// walk then skips their updates up to the version loaded.
//
// A page's events make no API call of their own but for the versions they
// load or merge (one each, through the event's links.version); a merge of
// the schema version the table holds needs no schema file; datasets the
// page makes pending are described together before it commits.
//
// A dataset that fails (bad file, bad rows) keeps its last good version, is
// marked failed with the reason, and the walk goes on; Sync then returns
// ErrPartial and the next Sync repairs it. Errors of the transport (the API
// unreachable after retries, a cancelled context) stop the sync with the
// cursor at the last committed page.
package replica
