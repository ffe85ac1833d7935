// Package replica keeps a local DuckDB file, or a PostgreSQL/PostGIS
// database, current with a Ploti Data Feeds subscription and with the
// datasets a member watches: one table per dataset, always at a released
// version, never half-applied.
//
// # Open, sync, read
//
//	r, err := replica.Open(ctx, "feeds.duckdb", replica.Options{
//		APIKey:         key,           // a secret: never logged
//		SubscriptionID: "sub_1",       // and/or Watch: true
//		Logger:         slog.Default(), // nil: no logs
//	})
//	res, err := r.Sync(ctx) // bootstrap or catch up; ErrPartial: res.Failures says why
//	rows, err := r.ReadOnly().QueryContext(ctx, "SELECT * FROM ds_fl_orange_permits")
//	st, err := r.Status(ctx) // versions, statuses, holds, cursor
//	err = r.Close()          // every later call: ErrClosed
//
// Open takes a postgres:// URL instead of a path to keep the replica in a
// PostgreSQL/PostGIS database: the same tables, _ploti state and rules.
//
// SyncResult says what a sync did: the counts, each dataset's move from
// one version to another (Moves), the datasets that failed and why
// (Failures: their last good version stays), and the holds the file has
// at its end, Ploti's and its own review holds (Holds).
//
// # Keep it current
//
// Run syncs at start, every RunOptions.Interval after, at once on each
// RunOptions.Signal (a webhook.Trigger's), with a backoff after a failed
// sync, until its context ends; it returns on an error no retry can mend
// (another subscription's file, a foreign cursor, the subscription gone
// twice in a row). RunFile does the same for a file other processes read
// between syncs: it opens the file for each sync only. A webhook.Handler
// with HandlerOptions.Wants set to r.Wants lets a member's
// dataset.changed start a sync for the datasets the replica keeps.
//
//	h, _ := webhook.NewHandler(webhook.HandlerOptions{Verifier: v, Trigger: trig, Wants: r.Wants})
//	err = r.Run(ctx, replica.RunOptions{Interval: time.Minute, Signal: trig.C(),
//		OnSync: func(res replica.SyncResult, err error) { … }})
//
// StopSync asks the sync under way to stop at its next commit point (it
// returns ErrStopped); the next one runs as usual. Cancelling a sync's
// context instead rolls its open transaction back. Close stops the sync
// under way the same way and waits for it.
//
// # Reading while it syncs
//
// Readers in the process see whole versions only, also while a sync runs.
// ReadOnly is the handle to give a service's users: on a DuckDB file it
// lets one SELECT-like statement per query through (on PostgreSQL, any
// query), each in a read-only transaction, and a write fails with
// ErrReadOnly (BeginTx gives one snapshot for several queries); DB is the
// writer's handle, for tables of your own beside the replica's. Another
// process opens a Reader (OpenReader), which never writes and calls no
// API. A DuckDB file is open in one place at a time: a second Open or
// OpenReader of it, in this process or another, waits for the first's
// Close (Options.LockTimeout) and then fails with ErrLocked; an
// application's own sql.Open of the file while a Replica holds it gets
// DuckDB's "different configuration" error, so share the Replica's
// handles instead.
//
// Built with -tags duckdb_arrow (duckdb-go's Arrow interface, and
// github.com/apache/arrow-go/v18), QueryArrow reads a query's rows as
// Arrow record batches, with ReadOnly's rules, without a row-by-row scan;
// a batch's values are freed at the reader's next Next or Release, so copy
// what you keep. It reads a DuckDB file only.
//
// # Errors and logs
//
// Errors say what failed and where (the dataset, the version, the file,
// the endpoint) and wrap the sentinels of errors.go (errors.Is): ErrLocked,
// ErrPartial, ErrStopped, ErrClosed, ErrSubscriptionGone,
// ErrForeignCursor, ErrReadOnly, …; fetch's (ErrRateLimited, ErrNotFound,
// …) come through as they are. No error or log line holds the API key, a
// webhook secret or a signed link's signature. Logs go to Options.Logger,
// a *slog.Logger.
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
//	        state-only events and small merges share the transaction, which
//	        goes on with the next page when it is in hand (group.go)
//	    commit the cursor after the last page held whole with their bookkeeping
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
// (as many pages as the limiter's burst, at most 40, kept for the walk)
// and, when the walk would need more calls than the burst, loads the
// datasets the manifest shows behind, but those the pages read name in a
// resync, schema change, addition or removal, from one manifest call
// (catchUpFromManifest), while the rest of the log (up to 200,000 events)
// is read in the background for the walk; the walk then skips their
// updates up to the version loaded.
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
