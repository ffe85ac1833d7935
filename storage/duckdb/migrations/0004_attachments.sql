-- Attachments (issue 13): the files Ploti holds with the version each
-- dataset holds (data dictionaries and the like), downloaded and verified.
-- version is the version whose links brought the file (a file that stays
-- the same across versions is not fetched again). A file no larger than
-- the replica's inline limit is kept in content; a larger one in a folder
-- beside the replica file, at path (relative to the file's folder).
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

-- The version at which each dataset's attachments were last checked and
-- changed (none, for a version without attachments), and why the last try
-- failed, if it did.
CREATE TABLE _ploti.attachment_syncs (
    dataset_id VARCHAR NOT NULL,
    version    INTEGER NOT NULL,
    synced_at  TIMESTAMPTZ NOT NULL,
    error      VARCHAR
);
