-- Watched datasets (issue 12): a dataset's version comes from the Data
-- Feeds subscription (source 'feed', Data Feeds version numbers) or from a
-- watch (source 'watch', Ploti's own version numbers); the two numberings
-- are never compared. DuckDB adds no column with a constraint, so the
-- registry is rebuilt with it, as migration 2 rebuilt _ploti.changes.
CREATE TABLE _ploti.datasets_0003 (
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
    columns            JSON,
    skip_until_removed BOOLEAN NOT NULL DEFAULT false,
    stale_last_checked_at TIMESTAMPTZ,
    stale_next_check_by   TIMESTAMPTZ,
    last_error         VARCHAR,
    failed_at          TIMESTAMPTZ,
    source             VARCHAR NOT NULL DEFAULT 'feed' CHECK (source IN ('feed', 'watch'))
);
INSERT INTO _ploti.datasets_0003 SELECT *, 'feed' FROM _ploti.datasets;
DROP TABLE _ploti.datasets;
ALTER TABLE _ploti.datasets_0003 RENAME TO datasets;

-- A watched version's renamed records (a record that now carries a new
-- id) are logged as 'renamed' under the new id; the old one is in id_map.
CREATE TABLE _ploti.changes_0003 (
    dataset_id VARCHAR NOT NULL,
    version    INTEGER NOT NULL,
    record_id  VARCHAR USING COMPRESSION uncompressed NOT NULL,
    change     VARCHAR NOT NULL CHECK (change IN ('added', 'changed', 'removed', 'renamed'))
);
INSERT INTO _ploti.changes_0003 SELECT dataset_id, version, record_id, change FROM _ploti.changes;
DROP TABLE _ploti.changes;
ALTER TABLE _ploti.changes_0003 RENAME TO changes;

-- Request events from member webhooks (data_request.*, research_request.*),
-- one row an event id: what is ready, failed or waiting for an answer.
CREATE TABLE _ploti.inbox (
    event_id    VARCHAR NOT NULL,
    type        VARCHAR NOT NULL,
    occurred_at TIMESTAMPTZ,
    received_at TIMESTAMPTZ NOT NULL,
    request_id  VARCHAR,
    url         VARCHAR,
    data        JSON
);
