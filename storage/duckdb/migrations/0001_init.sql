-- The engine's own metadata. Other tools read these names: keep them.
-- No PRIMARY KEY or UNIQUE index anywhere: DuckDB's WAL replay has known
-- failures after a crash during delete-then-insert of one key under an index
-- (duckdb issues 15836, 22124); the engine keeps keys unique itself.
CREATE SCHEMA IF NOT EXISTS _ploti;

CREATE TABLE _ploti.subscription (
    subscription_id VARCHAR NOT NULL,
    api_url         VARCHAR NOT NULL,
    cursor          VARCHAR,
    last_sync_at    TIMESTAMPTZ,
    manifest_at     TIMESTAMPTZ
);

CREATE TABLE _ploti.datasets (
    dataset_id         VARCHAR NOT NULL,
    table_name         VARCHAR NOT NULL,
    title              VARCHAR,
    place_id           VARCHAR,
    topic              VARCHAR,
    version            INTEGER,
    previous_version   INTEGER,
    schema_version     VARCHAR,
    key_columns        VARCHAR[],
    row_count          BIGINT,
    status             VARCHAR NOT NULL CHECK (status IN ('pending', 'current', 'held', 'removed', 'failed')),
    status_reason      VARCHAR,
    updated_at         TIMESTAMPTZ NOT NULL,
    -- The table's schema columns as JSON (ploti schema column objects).
    columns            JSON,
    -- Set after a 409/404 from links.version: skip events until feed.dataset.removed.
    skip_until_removed BOOLEAN NOT NULL DEFAULT false,
    stale_last_checked_at TIMESTAMPTZ,
    stale_next_check_by   TIMESTAMPTZ,
    last_error         VARCHAR,
    failed_at          TIMESTAMPTZ
);

CREATE TABLE _ploti.holds (
    dataset_id VARCHAR NOT NULL,
    version    INTEGER,
    kind       VARCHAR NOT NULL CHECK (kind IN ('server', 'local')),
    reason     VARCHAR NOT NULL,
    since      TIMESTAMPTZ,
    detail     JSON
);

CREATE TABLE _ploti.applied_events (
    event_id   VARCHAR NOT NULL,
    applied_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE _ploti.id_map (
    dataset_id VARCHAR NOT NULL,
    version    INTEGER NOT NULL,
    from_id    VARCHAR NOT NULL,
    to_id      VARCHAR NOT NULL
);

CREATE TABLE _ploti.changes (
    dataset_id VARCHAR NOT NULL,
    version    INTEGER NOT NULL,
    record_id  VARCHAR NOT NULL,
    change     VARCHAR NOT NULL CHECK (change IN ('added', 'changed', 'removed'))
);

CREATE SEQUENCE _ploti.sync_run_seq START 1;

CREATE TABLE _ploti.sync_runs (
    run_id          BIGINT NOT NULL DEFAULT nextval('_ploti.sync_run_seq'),
    started_at      TIMESTAMPTZ NOT NULL,
    finished_at     TIMESTAMPTZ,
    result          VARCHAR,
    error           VARCHAR,
    cursor_from     VARCHAR,
    cursor_to       VARCHAR,
    events_seen     BIGINT,
    events_applied  BIGINT,
    events_skipped  BIGINT,
    snapshots_loaded BIGINT,
    changes_merged  BIGINT
);
