-- The DuckDB file's migration 8 (storage/migrations/0008_history.sql): the
-- history's schemas, ends and versions.
CREATE SCHEMA IF NOT EXISTS history;
CREATE SCHEMA IF NOT EXISTS _ploti_history;

CREATE TABLE _ploti.history_ends (
    dataset_id  text NOT NULL,
    record_id   text NOT NULL,
    valid_to    integer NOT NULL,
    valid_to_at timestamptz
);

CREATE TABLE _ploti.history_versions (
    dataset_id   text NOT NULL,
    source       text NOT NULL,
    version      integer NOT NULL,
    published_at timestamptz,
    recorded_at  timestamptz NOT NULL,
    kind         text NOT NULL CHECK (kind IN ('first', 'merge', 'reload'))
);
