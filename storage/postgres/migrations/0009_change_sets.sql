-- The DuckDB file's migration 9 (storage/duckdb/migrations/0009_change_sets.sql):
-- _ploti.changes becomes a view over change_sets (a row per dataset and
-- version the log holds) and change_rows (a row per logged record, naming
-- its set by number, its kind of change an enum). Readers see the same
-- columns as before; the rows are kept.
CREATE TYPE _ploti.change_kind AS ENUM ('added', 'changed', 'removed', 'renamed');
CREATE TABLE _ploti.change_sets (
    set_id     integer NOT NULL,
    dataset_id text NOT NULL,
    version    integer NOT NULL
);
CREATE UNIQUE INDEX change_sets_dataset_version ON _ploti.change_sets (dataset_id, version);
CREATE TABLE _ploti.change_rows (
    set_id    integer NOT NULL,
    record_id text NOT NULL,
    change    _ploti.change_kind NOT NULL
);
CREATE INDEX change_rows_set ON _ploti.change_rows (set_id);
INSERT INTO _ploti.change_sets
    SELECT row_number() OVER (ORDER BY dataset_id, version), dataset_id, version
    FROM (SELECT DISTINCT dataset_id, version FROM _ploti.changes) dv;
INSERT INTO _ploti.change_rows
    SELECT s.set_id, c.record_id, CAST(c.change AS _ploti.change_kind)
    FROM _ploti.changes c JOIN _ploti.change_sets s ON s.dataset_id = c.dataset_id AND s.version = c.version;
DROP TABLE _ploti.changes;
CREATE VIEW _ploti.changes AS
    SELECT s.dataset_id, s.version, r.record_id, CAST(r.change AS text) AS change
    FROM _ploti.change_rows r JOIN _ploti.change_sets s ON s.set_id = r.set_id;
