-- Named marks (issue 16): where a consumer ("what changed since I
-- looked?") last looked at each dataset, by name. version is the version
-- the consumer has seen (the dataset's own numbering: Data Feeds for a
-- feed dataset, Ploti's for a watched one); "at" (quoted: a keyword of
-- DuckDB's) is when the mark moved.
-- One row a name and dataset; a name with no row for a dataset starts
-- before the oldest change kept.
CREATE TABLE _ploti.marks (
    name       VARCHAR NOT NULL,
    dataset_id VARCHAR NOT NULL,
    version    INTEGER NOT NULL,
    "at"       TIMESTAMPTZ NOT NULL
);
