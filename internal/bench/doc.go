// Package bench measures ploti-replica against DuckDB's own ceiling, side
// by side in one run (issue 6): a snapshot load against a bare CREATE TABLE
// AS SELECT from read_parquet, a changes merge against a full reload and
// against the bare DELETE and INSERT, a catch-up of the event log, the peak
// memory of a load (in child processes), the file's size over reloads, and
// the demo's time to the first answer.
//
// Data comes from the bundled emulator (a permits-like dataset built in
// DuckDB SQL); the engine runs through replica.Open and Sync on loopback
// HTTP with the downloads timed apart, and DuckDB alone runs through
// storage.OpenPlain, a plain connection with the engine's settings. Every
// measurement runs Config.Repeat times (three by default) and is reported
// as its median and range.
//
//	cfg := bench.Config{Rows: []int64{1_000_000}, Log: os.Stderr}
//	rep, err := bench.Run(ctx, cfg)
//	rep.WriteTable(os.Stdout)
//	fmt.Println(rep.SummaryLine())
package bench
