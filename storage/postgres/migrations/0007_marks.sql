-- The DuckDB file's migration 7 (storage/migrations/0007_marks.sql): named
-- marks, where a consumer last looked at each dataset.
CREATE TABLE _ploti.marks (
    name       text NOT NULL,
    dataset_id text NOT NULL,
    version    integer NOT NULL,
    "at"       timestamptz NOT NULL
);
