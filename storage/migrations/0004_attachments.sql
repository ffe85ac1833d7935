-- Attachments (issue 13): the files Ploti holds with a dataset's version
-- (data dictionaries and the like), downloaded and verified, for the
-- version each dataset holds. A file no larger than the replica's inline
-- limit is kept in content; a larger one in a folder beside the replica
-- file, at path (relative to the replica file's folder).
CREATE TABLE _ploti.attachments (
    dataset_id   VARCHAR NOT NULL,
    version      INTEGER NOT NULL,
    name         VARCHAR NOT NULL,
    content_type VARCHAR,
    bytes        BIGINT NOT NULL,
    sha256       VARCHAR NOT NULL,
    content      BLOB,
    path         VARCHAR,
    fetched_at   TIMESTAMPTZ NOT NULL,
    CHECK ((content IS NULL) <> (path IS NULL))
);

-- The version whose attachments each dataset's rows are (none, for a
-- version without attachments), and why the last try failed, if it did.
CREATE TABLE _ploti.attachment_syncs (
    dataset_id VARCHAR NOT NULL,
    version    INTEGER NOT NULL,
    synced_at  TIMESTAMPTZ NOT NULL,
    error      VARCHAR
);
