-- _ploti.changes becomes a view over two tables: change_sets, a row per
-- dataset and version the log holds, and change_rows, a row per logged
-- record naming its set by number, with the kind of change an ENUM. The
-- rows then carry no repeated strings: a 1% merge of 10M rows logs
-- 100,000 of them, and their insert and checkpoint took 40 ms with the
-- dataset id and the kind as VARCHAR in every row, 17 ms this way
-- (docs/decisions.md 104). Readers see the same columns as before, with
-- the same types; the rows are kept. The ENUM is written out, not a named
-- type: DuckDB 1.5.6 cannot replay a write-ahead log that creates a type
-- in the _ploti schema ("Schema with name _ploti does not exist"), so a
-- file whose migration was not yet checkpointed would not open again.
CREATE TABLE _ploti.change_sets (
    set_id     INTEGER NOT NULL,
    dataset_id VARCHAR NOT NULL,
    version    INTEGER NOT NULL
);
CREATE TABLE _ploti.change_rows (
    set_id    INTEGER NOT NULL,
    record_id VARCHAR USING COMPRESSION uncompressed NOT NULL,
    change    ENUM('added', 'changed', 'removed', 'renamed') NOT NULL
);
INSERT INTO _ploti.change_sets
    SELECT row_number() OVER (ORDER BY dataset_id, version), dataset_id, version
    FROM (SELECT DISTINCT dataset_id, version FROM _ploti.changes);
INSERT INTO _ploti.change_rows
    SELECT s.set_id, c.record_id, c.change
    FROM _ploti.changes c JOIN _ploti.change_sets s ON s.dataset_id = c.dataset_id AND s.version = c.version;
DROP TABLE _ploti.changes;
CREATE VIEW _ploti.changes AS
    SELECT s.dataset_id, s.version, r.record_id, CAST(r.change AS VARCHAR) AS change
    FROM _ploti.change_rows r JOIN _ploti.change_sets s ON s.set_id = r.set_id;
