-- History (issue 16; docs/decisions.md 45), for the datasets told to keep
-- it. Each such dataset's rows are in _ploti_history.<table> (made when
-- its history starts); history.<table> is the user's view of them, with
-- the macros <table>_as_of(version), <table>_at(timestamp) and
-- <table>_story(record_id). Both schemas are made here so that a reader
-- finds them in every file.
CREATE SCHEMA IF NOT EXISTS history;
CREATE SCHEMA IF NOT EXISTS _ploti_history;

-- A version that changed, removed or renamed a record ends the history
-- row its id carried: the row is current until the first end of its id
-- after it. Append-only, so that a merge never reads the history.
CREATE TABLE _ploti.history_ends (
    dataset_id  VARCHAR NOT NULL,
    record_id   VARCHAR NOT NULL,
    valid_to    INTEGER NOT NULL,
    valid_to_at TIMESTAMPTZ
);

-- The versions each history recorded: first (the history began at it),
-- merge, reload. source says whose version numbers (feed or watch).
-- published_at is Ploti's publishedAt (promotedAt for a watched dataset),
-- NULL when not known; recorded_at is when the replica recorded it.
CREATE TABLE _ploti.history_versions (
    dataset_id   VARCHAR NOT NULL,
    source       VARCHAR NOT NULL,
    version      INTEGER NOT NULL,
    published_at TIMESTAMPTZ,
    recorded_at  TIMESTAMPTZ NOT NULL,
    kind         VARCHAR NOT NULL CHECK (kind IN ('first', 'merge', 'reload'))
);
