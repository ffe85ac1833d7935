-- The engine's own metadata in PostgreSQL: the same tables and columns as
-- a DuckDB file's _ploti at its migration 6 (storage/migrations 0001 to
-- 0006), in PostgreSQL's types (VARCHAR text, JSON jsonb, BLOB bytea).
-- Other tools read these names: keep them. A later DuckDB migration gets
-- a file of the same number here (TestSchema_SameAsDuckDB holds them equal).
CREATE TABLE _ploti.subscription (
    subscription_id text NOT NULL,
    api_url         text NOT NULL,
    cursor          text,
    last_sync_at    timestamptz,
    manifest_at     timestamptz
);

CREATE TABLE _ploti.datasets (
    dataset_id         text NOT NULL,
    table_name         text NOT NULL,
    title              text,
    place_id           text,
    topic              text,
    version            integer,
    previous_version   integer,
    schema_version     text,
    key_columns        text[],
    row_count          bigint,
    status             text NOT NULL CHECK (status IN ('pending', 'current', 'held', 'removed', 'failed')),
    status_reason      text,
    updated_at         timestamptz NOT NULL,
    columns            jsonb,
    skip_until_removed boolean NOT NULL DEFAULT false,
    stale_last_checked_at timestamptz,
    stale_next_check_by   timestamptz,
    last_error         text,
    failed_at          timestamptz,
    source             text NOT NULL DEFAULT 'feed' CHECK (source IN ('feed', 'watch'))
);
CREATE UNIQUE INDEX datasets_dataset_id ON _ploti.datasets (dataset_id);

CREATE TABLE _ploti.holds (
    dataset_id text NOT NULL,
    version    integer,
    kind       text NOT NULL CHECK (kind IN ('server', 'local')),
    reason     text NOT NULL,
    since      timestamptz,
    detail     jsonb
);

CREATE TABLE _ploti.applied_events (
    event_id   text NOT NULL,
    applied_at timestamptz NOT NULL
);
CREATE INDEX applied_events_event_id ON _ploti.applied_events (event_id);

CREATE TABLE _ploti.id_map (
    dataset_id text NOT NULL,
    version    integer NOT NULL,
    from_id    text NOT NULL,
    to_id      text NOT NULL
);
CREATE INDEX id_map_dataset_version ON _ploti.id_map (dataset_id, version);

CREATE TABLE _ploti.changes (
    dataset_id text NOT NULL,
    version    integer NOT NULL,
    record_id  text NOT NULL,
    change     text NOT NULL CHECK (change IN ('added', 'changed', 'removed', 'renamed'))
);
CREATE INDEX changes_dataset_version ON _ploti.changes (dataset_id, version);

CREATE SEQUENCE _ploti.sync_run_seq START 1;

CREATE TABLE _ploti.sync_runs (
    run_id          bigint NOT NULL DEFAULT nextval('_ploti.sync_run_seq'),
    started_at      timestamptz NOT NULL,
    finished_at     timestamptz,
    result          text,
    error           text,
    cursor_from     text,
    cursor_to       text,
    events_seen     bigint,
    events_applied  bigint,
    events_skipped  bigint,
    snapshots_loaded bigint,
    changes_merged  bigint
);

CREATE TABLE _ploti.inbox (
    event_id    text NOT NULL,
    type        text NOT NULL,
    occurred_at timestamptz,
    received_at timestamptz NOT NULL,
    request_id  text,
    url         text,
    data        jsonb
);

CREATE TABLE _ploti.attachments (
    dataset_id   text NOT NULL,
    version      integer NOT NULL,
    name         text NOT NULL,
    content_type text,
    bytes        bigint NOT NULL,
    sha256       text NOT NULL,
    content      bytea,
    path         text,
    fetched_at   timestamptz NOT NULL,
    CHECK ((content IS NULL) <> (path IS NULL))
);

CREATE TABLE _ploti.attachment_syncs (
    dataset_id text NOT NULL,
    version    integer NOT NULL,
    synced_at  timestamptz NOT NULL,
    error      text
);

-- A DuckDB file's commit chain guards its write-ahead log; PostgreSQL
-- guards its own. The table is kept, empty, so that the two _ploti
-- schemas have the same tables.
CREATE TABLE _ploti.commit_log (
    seq          bigint NOT NULL,
    token        bigint NOT NULL,
    prev         bigint,
    committed_at timestamptz NOT NULL
);

-- geometry is 'postgis': PostGIS geometry in SRID 4326.
CREATE TABLE _ploti.settings (
    name  text NOT NULL,
    value text NOT NULL
);
INSERT INTO _ploti.settings VALUES ('geometry', 'postgis');
