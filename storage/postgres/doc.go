// Package postgres keeps the replica in a PostgreSQL database with
// PostGIS: the same dataset tables and the same _ploti state as
// a DuckDB file (package storage), for teams whose readers are on other
// machines (QGIS, BI servers, psql) and must never wait for the writer.
//
// DuckDB still reads the downloaded files: an in-memory DuckDB (two per
// DB: one checks, one exports) reads and checks the Parquet snapshots and changes files and the
// NDJSON rows of watched datasets with the very SQL the DuckDB engine
// uses (duckread.SelectList, duckread.JSONRowsQuery, the same checks and
// refusals, in the same words), and the rows reach PostgreSQL by COPY …
// FROM STDIN (FORMAT binary) on pgx, never by INSERTs row by row:
//
//	read_parquet / read_json ─ DuckDB casts to the schema's types
//	   └─ exportSelect: dates and timestamps as PostgreSQL's day and µs
//	      counts, JSON as text, geometry as WKB
//	         └─ copyWriter (Go): the binary COPY format from DuckDB's
//	            data chunks, geometry as EWKB in SRID 4326 ─ io.Pipe ─
//	            pgconn.CopyFrom
//
// The three run at once. The export runs on a second in-memory DuckDB,
// opened through DuckDB's C API (chunks.go) with the same settings: its
// streaming result gives the rows a chunk of 2,048 at a time, and each
// field is encoded from its vector's memory (vectors.go), never made a
// Go value (database/sql's driver makes one of each cell, and that was
// most of the process's CPU in a load); a table of any size passes in
// the memory of a few chunks. The writer's transactions:
//
//	LoadSnapshot, LoadRows   CREATE TABLE _ploti_load_N; COPY; primary key
//	                         on _ploti_record_id; a GiST index a geometry
//	                         column; at Commit the table is swapped in
//	                         (DROP the old, RENAME the new) in the round
//	                         trip that commits, with the old one's grants
//	MergeChanges             CREATE TEMP TABLE; COPY; then in one round
//	                         trip (batch.go): one statement that updates
//	                         the changed rows in place (UPDATE … FROM, on
//	                         the pages' free room: fillfactor 90), deletes
//	                         the removed ones and checks the fit (an added
//	                         id held, a changed or removed id not held);
//	                         INSERT … SELECT of the added; _ploti.changes
//	MergeWatch               the same from ids and NDJSON rows
//	ApplyIDMap, AddColumns   COPY into _ploti.id_map; ALTER TABLE
//
// Readers in READ COMMITTED (PostgreSQL's default) see a table at the old
// version or the new one, whole, and never wait for a load: the rows go
// into a table no reader sees, and the swap takes the old table's lock
// only when no query holds it (NOWAIT tries, then tries of SwapWait), for
// the few milliseconds of its rename and commit.
//
// Readers on a hot standby of the database (streaming replication) see
// the same: a swap or a merge replays as the one transaction it was, so a
// query there sees a version whole, or nothing when it is cancelled. The
// swap's lock replays too: the standby's replay waits for the queries
// reading the table, for up to its max_standby_streaming_delay (30 s by
// default), then cancels them (SQLSTATE 40001, "conflict with recovery"),
// and the table's queries that come meanwhile wait behind the replay.
// Merges take no such lock, and the tables are created with
// vacuum_truncate off (tableOptions) so that VACUUM never takes one;
// hot_standby_feedback on the standby keeps VACUUM, and the pruning of
// a page whose rows a merge updated, from removing rows its queries
// still read.
//
// Types (PGType): string text, integer bigint, number double precision,
// decimal numeric(p,s), boolean, date, timestamp timestamptz, json jsonb,
// geometry geometry(Type,4326) when the schema names one geometry type
// (else geometry with CHECK (ST_SRID(g) = 4326)), a list an array of its
// items' type (a list of lists jsonb).
//
// One writer a database: Open takes a session-level advisory lock and
// waits for it with backoff up to LockTimeout, and a database it cannot
// have is refused with storage.ErrLocked naming the session that holds
// it, as a DuckDB file is. Every write runs on that session.
//
// A replica runs on it through storage: OpenDB is a storage.DB over the
// database (Engine), whose registry statements run through database/sql
// on the writer's session (pgx's driver; the registry's ? placeholders are
// numbered as $n, sqldriver.go) and whose transactions are also this
// package's Tx on that session (engine.go), so the registry's rows commit
// with the table's. ReadOnly opens it as a reader (status, holds): no
// lock, no migration.
//
// _ploti is a schema with the DuckDB file's tables and columns
// (migrations/, numbered as the DuckDB file's: storage/backends'
// TestSchema_sameAsDuckDB); the dataset tables are in Options.Schema
// (default public).
package postgres
