-- The file's commit chain (issue 15): each write transaction of the engine
-- appends a random token and the token of the commit before it. A
-- write-ahead log beside the file whose commits do not continue the
-- file's last one (a log of an older state of the file, copied back or
-- left behind) is refused before DuckDB replays it over the file. Rows
-- older than the last thousand are pruned.
CREATE TABLE _ploti.commit_log (
    seq          BIGINT NOT NULL,
    token        BIGINT NOT NULL,
    prev         BIGINT,
    committed_at TIMESTAMPTZ NOT NULL
);
