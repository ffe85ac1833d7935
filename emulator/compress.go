package emulator

import (
	"context"
	"database/sql"
	"database/sql/driver"

	"github.com/duckdb/duckdb-go/v2"
)

// compressedDB is the in-memory database a build's tables live in with
// Options.CompressTables.
const compressedDB = "zz_emulator_mem"

// openSQL opens the emulator's in-memory DuckDB: with CompressTables,
// every connection of the pool uses an in-memory database attached with
// COMPRESS (USE is a connection's, so each one says it as it opens).
func (e *Emulator) openSQL() (*sql.DB, error) {
	if !e.opts.CompressTables {
		return sql.Open("duckdb", "")
	}
	c, err := duckdb.NewConnector("", func(ex driver.ExecerContext) error {
		for _, q := range []string{"ATTACH IF NOT EXISTS ':memory:' AS " + compressedDB + " (COMPRESS)", "USE " + compressedDB} {
			if _, err := ex.ExecContext(context.Background(), q, nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(c), nil
}

// compact checkpoints the compressed in-memory database, so that the
// tables made since are held compressed; without CompressTables it does
// nothing.
func (e *Emulator) compact(ctx context.Context) error {
	if !e.opts.CompressTables {
		return nil
	}
	_, err := e.db.ExecContext(ctx, "CHECKPOINT "+compressedDB)
	return err
}
