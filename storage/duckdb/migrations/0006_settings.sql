-- Settings of the file that every writer must follow (issue 14). geometry
-- is how dataset tables store geometry columns: 'geometry' (DuckDB's
-- GEOMETRY, which only DuckDB 1.5 reads as geometry) or 'wkb' (standard
-- WKB in a BLOB, which every DuckDB client reads). Files before this
-- migration stored GEOMETRY.
CREATE TABLE _ploti.settings (
    name  VARCHAR NOT NULL,
    value VARCHAR NOT NULL
);
INSERT INTO _ploti.settings VALUES ('geometry', 'geometry');
