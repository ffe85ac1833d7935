// Package clients has no code of its own: its test reads the files
// ploti-replica writes with other DuckDB clients, as a user's notebook or
// dashboard would: @duckdb/node-api at the oldest version that reads them
// (DuckDB 1.1.2), at 1.4 and at the newest 1.5, pinned in
// testdata/package.json and package-lock.json. It checks the tables, their
// column types and comments, the _ploti registry, the row counts and the
// geometry as each client sees it, against what the engine's own DuckDB
// reads.
//
// The clients are not in the repository: the test installs them with
// `npm ci --ignore-scripts` (each client's native build is an optional
// package of its own, @duckdb/node-bindings-<platform>, which npm picks by
// platform; nothing needs an install script) into
// ploti-replica/node-clients/<SHA-256 of the lock file> in the user's cache
// folder (os.UserCacheDir; PLOTI_NODE_CLIENTS_DIR names another folder to
// keep them under), and uses that install as it is from then on. npm ci
// runs in a temporary folder renamed into place once it has finished, so
// a killed install is never taken for a finished one; a new lock file
// installs afresh beside the old.
//
// npm ci refused the lock file as npm 11 had written it: npm left out the
// other platforms' builds of the 1.1 and 1.4 clients' bindings (darwin,
// win32, linux-arm64), which the registry it was made against does not
// serve, and npm ci counts them missing. Those seven entries were added by
// hand with the versions the bindings pin, their os and cpu, and no
// integrity (npm takes them from the registry by version on those
// platforms); every other entry is as npm wrote it, the same versions.
//
// Without node and npm, or with npm's registry out of reach (asked first,
// within seconds), the test skips, saying why; with PLOTI_REQUIRE_NODE set
// (.ci/run sets it) it fails instead.
package clients
