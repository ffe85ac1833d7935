// Package clients has no code of its own: its test reads the files
// ploti-replica writes with other DuckDB clients, as a user's notebook or
// dashboard would (issue 14): @duckdb/node-api at the oldest version that
// reads them (DuckDB 1.1.2), at 1.4 and at the newest 1.5, pinned in
// testdata/package.json and package-lock.json and installed with npm into
// testdata/node_modules. It checks the tables, their column types and
// comments, the _ploti registry, the row counts and the geometry as each
// client sees it, against what the engine's own DuckDB reads.
//
// Without node and npm the test skips, saying so; with PLOTI_REQUIRE_NODE
// set (.ci/run sets it) it fails instead.
package clients
