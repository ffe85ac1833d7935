package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"
)

func must(err error) {
	if err != nil {
		panic(err)
	}
}

const check = `SELECT count(*), count(*) - count(_ploti_record_id), (SELECT count(*) FROM (SELECT h = lag(h) OVER (ORDER BY h) AS same FROM (SELECT hash(_ploti_record_id) AS h FROM %s WHERE _ploti_record_id IS NOT NULL)) WHERE same) FROM %s`

func main() {
	if _, err := os.Stat("/tmp/probe/p.parquet"); err != nil {
		db, _ := sql.Open("duckdb", "/tmp/probe/base.duckdb")
		_, err := db.Exec(`COPY p TO '/tmp/probe/p.parquet' (FORMAT parquet, ROW_GROUP_SIZE 122880)`)
		must(err)
		db.Close()
	}
	ctx := context.Background()
	for _, mode := range []string{"parts", "parts", "one"} {
		os.Remove("/tmp/probe/s.duckdb")
		os.Remove("/tmp/probe/s.duckdb.wal")
		db, _ := sql.Open("duckdb", "/tmp/probe/s.duckdb?threads=2")
		c, _ := db.Conn(ctx)
		exec := func(q string) time.Duration {
			t := time.Now()
			_, err := c.ExecContext(ctx, q)
			must(err)
			return time.Since(t)
		}
		exec("BEGIN")
		src := "read_parquet('/tmp/probe/p.parquet', file_row_number = true)"
		var load time.Duration
		if mode == "one" {
			load += exec("CREATE TABLE t AS SELECT * EXCLUDE (file_row_number) FROM " + src)
		} else {
			load += exec("CREATE TABLE t AS SELECT * EXCLUDE (file_row_number) FROM " + src + " WHERE file_row_number < 500000")
			for from := 500000; from < 10000000; from += 500000 {
				load += exec(fmt.Sprintf("INSERT INTO t SELECT * EXCLUDE (file_row_number) FROM %s WHERE file_row_number >= %d AND file_row_number < %d", src, from, from+500000))
			}
		}
		t := time.Now()
		var a, b, d int64
		must(c.QueryRowContext(ctx, fmt.Sprintf(check, "t", "t")).Scan(&a, &b, &d))
		chk := time.Since(t)
		t = time.Now()
		must(c.QueryRowContext(ctx, "SELECT sum(hash(_ploti_record_id) % 7) FROM t").Scan(&a))
		scan := time.Since(t)
		cm := exec("COMMIT")
		t = time.Now()
		must(c.QueryRowContext(ctx, fmt.Sprintf(check, "t", "t")).Scan(&a, &b, &d))
		chk2 := time.Since(t)
		fmt.Printf("%s: load %.2f check in tx %.3f (scan+hash %.3f) commit %.2f check after %.3f\n", mode, load.Seconds(), chk.Seconds(), scan.Seconds(), cm.Seconds(), chk2.Seconds())
		c.Close()
		db.Close()
	}
}
