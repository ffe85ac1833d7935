// Package bench measures ploti-replica against DuckDB's own ceiling, side
// by side in one run: a snapshot load against a bare CREATE TABLE
// AS SELECT from read_parquet, a changes merge against a full reload and
// against the bare DELETE and INSERT, a catch-up of the event log, the peak
// memory of a load (in child processes), the file's size over reloads, and
// the demo's time to the first answer.
//
// With a PostgreSQL (Config.Postgres, a superuser's URL) the
// postgres section measures a replica kept there against PostgreSQL alone:
// the bootstrap against the same DDL and COPY of a CSV of the same rows,
// a 1% merge against its DELETE and INSERT from a COPY'd temporary table,
// each in one transaction, and a reader's latency on another session
// during a merge and a reload. It makes a database with PostGIS, copies
// it for each step and drops them all at the end; both sides' CPU is this
// process's and the cluster's (postgres_reader.go reads it from /proc).
//
// Data comes from the bundled emulator (a permits-like dataset built in
// DuckDB SQL); the engine runs through replica.Open and Sync on loopback
// HTTP with the downloads timed apart, and DuckDB alone runs through
// duckread.OpenPlain, a plain connection with the engine's settings. Every
// measurement runs Config.Repeat times (three by default) and is reported
// as its median and range.
//
//	cfg := bench.Config{Rows: []int64{1_000_000}, Log: os.Stderr}
//	rep, err := bench.Run(ctx, cfg)
//	rep.WriteTable(os.Stdout)
//	fmt.Println(rep.SummaryLine())
package bench
