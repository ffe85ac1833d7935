package storage

// The few registry statements whose SQL differs between the DuckDB file
// and a Backend's database (PostgreSQL); every other statement is the
// same text on both (backend.go).

// takenNamesSQL lists the names of the tables and views in the schema of
// the dataset tables: a new dataset's table takes none of them.
func (db *DB) takenNamesSQL() string {
	if db.be != nil {
		return "SELECT table_name::VARCHAR FROM information_schema.tables WHERE table_schema = " + Literal(db.be.Schema())
	}
	return `SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main'
		UNION ALL SELECT view_name FROM duckdb_views() WHERE schema_name = 'main'`
}
