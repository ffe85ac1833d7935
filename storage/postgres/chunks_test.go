package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/big"
	"strconv"
	"strings"
	"testing"
	"time"

	bindings "github.com/duckdb/duckdb-go-bindings"

	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
)

// chunkRows is more rows than two of DuckDB's data chunks (2,048 rows).
const chunkRows = 5000

// wideCols are a column of each type a snapshot may carry, a decimal of
// each width DuckDB holds in another integer.
var wideCols = []ploti.Column{
	col("s", ploti.TypeString), col("i", ploti.TypeInteger), col("n", ploti.TypeNumber),
	{Name: "d", Type: ploti.Type{Type: ploti.TypeDecimal, Precision: &ploti.Precision{Precision: 38, Scale: 2}}},
	{Name: "d4", Type: ploti.Type{Type: ploti.TypeDecimal, Precision: &ploti.Precision{Precision: 9, Scale: 4}}},
	col("b", ploti.TypeBoolean), col("dt", ploti.TypeDate), col("ts", ploti.TypeTimestamp),
	{Name: "l", Type: ploti.Type{Type: ploti.TypeList, Items: &ploti.Type{Type: ploti.TypeString}}},
	{Name: "ld", Type: ploti.Type{Type: ploti.TypeList, Items: &ploti.Type{Type: ploti.TypeDecimal, Precision: &ploti.Precision{Precision: 10, Scale: 3}}}},
	col("j", ploti.TypeJSON), col("g", ploti.TypeGeometry),
}

// wideQuery is chunkRows rows of wideCols: NULLs, strings inline in
// DuckDB's string_t (up to 12 bytes) and not, a NUL, empty lists and
// lists with a NULL item, negative decimals of 36 digits.
const wideQuery = `SELECT 'r' || i AS _ploti_record_id, 'fl' AS _ploti_place_id,
	CASE WHEN i % 7 = 0 THEN NULL WHEN i % 11 = 0 THEN 'x' || chr(0) || 'y' ELSE 'a longer string, number ' || i END AS s,
	CASE WHEN i % 5 = 0 THEN NULL ELSE i * 1000000007 END AS i,
	i / 4.0 AS n,
	CAST((i - 2500) || '123456789012345678901234567.89' AS DECIMAL(38,2)) AS d,
	CAST((i - 2500) / 8.0 AS DECIMAL(9,4)) AS d4,
	i % 3 = 0 AS b,
	DATE '1960-01-01' + i::INT AS dt,
	TIMESTAMPTZ '1990-01-01 00:00:00+00' + to_microseconds(i * 3600000001) AS ts,
	CASE WHEN i % 13 = 0 THEN []::VARCHAR[] WHEN i % 17 = 0 THEN ['a', NULL] ELSE ['t' || i, 'u'] END AS l,
	[(i / 1000.0)::DECIMAL(10,3), NULL] AS ld,
	json_object('k', i) AS j,
	ST_AsWKB(('POINT (' || i || ' ' || -i || ')')::GEOMETRY) AS g
	FROM range(5000) t(i)`

// The rows reach PostgreSQL from DuckDB's data chunks as they were: every
// type, NULL and chunk boundary, counted and summed on both sides.
func TestCopy_everyTypeAcrossChunks(t *testing.T) {
	ctx := context.Background()
	db, u := mustOpen(t)
	f := mustParquet(t, mustDuck(t), wideQuery)
	err := db.Update(ctx, func(tx *Tx) error {
		n, err := tx.LoadSnapshot(ctx, "wide", wideCols, []string{f})
		if err == nil && n != chunkRows {
			err = fmt.Errorf("rows = %d, want %d", n, chunkRows)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var got string
	if err := mustReader(t, u).QueryRow(ctx, `SELECT concat_ws(' ', count(s), count(*) FILTER (WHERE s LIKE '%'||U&'\FFFD'||'%'), sum(length(s)),
		count(i), sum(i), sum(n), sum(d), sum(d4), count(*) FILTER (WHERE b), sum(dt - DATE '1960-01-01'),
		sum(EXTRACT(EPOCH FROM ts - TIMESTAMPTZ '1990-01-01 00:00:00+00') * 1000000), sum(cardinality(l)),
		count(*) FILTER (WHERE array_position(l, NULL) IS NOT NULL), count(*) FILTER (WHERE l = '{}'),
		sum(ld[1]), count(*) FILTER (WHERE ld[2] IS NULL), sum((j->>'k')::int), sum(ST_X(g)), count(*) FILTER (WHERE ST_SRID(g) = 4326),
		min(d), max(d))
		FROM wide`).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if want := wideSums(); got != want {
		t.Fatalf("PostgreSQL's sums\n%s\nwant\n%s", got, want)
	}
}

// wideSums are wideQuery's sums as PostgreSQL prints them, from the
// rows' formulas.
func wideSums() string {
	var s, nul, slen, ni, si, nb, sdt, l, lnull, lempty, sj int64
	var sn, sg float64
	sts, sd, sld, sd4 := new(big.Int), new(big.Rat), new(big.Rat), new(big.Rat)
	d := func(i int64) *big.Rat {
		r, _ := new(big.Rat).SetString(fmt.Sprintf("%d123456789012345678901234567.89", i-2500))
		return r
	}
	for i := int64(0); i < chunkRows; i++ {
		switch {
		case i%7 == 0:
		case i%11 == 0:
			s, nul, slen = s+1, nul+1, slen+3
		default:
			s, slen = s+1, slen+int64(len(fmt.Sprint("a longer string, number ", i)))
		}
		if i%5 != 0 {
			ni, si = ni+1, si+i*1000000007
		}
		sn += float64(i) / 4
		sd.Add(sd, d(i))
		sd4.Add(sd4, big.NewRat(i-2500, 8))
		if i%3 == 0 {
			nb++
		}
		sdt += i
		sts.Add(sts, big.NewInt(i*3600000001))
		switch {
		case i%13 == 0:
			lempty++
		case i%17 == 0:
			l, lnull = l+2, lnull+1
		default:
			l += 2
		}
		sld.Add(sld, big.NewRat(i, 1000))
		sj += i
		sg += float64(i)
	}
	return fmt.Sprintf("%d %d %d %d %d %s %s %s %d %d %s.000000 %d %d %d %s %d %d %s %d %s %s", s, nul, slen, ni, si, num(sn), sd.FloatString(2), sd4.FloatString(4), nb, sdt,
		sts, l, lnull, lempty, sld.FloatString(3), chunkRows, sj, num(sg), chunkRows, d(0).FloatString(2), d(chunkRows-1).FloatString(2))
}

// num is x as PostgreSQL prints a double.
func num(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// A value that does not cast in a later chunk, after rows went to
// PostgreSQL, is refused in DuckDB's words, and the COPY with it.
func TestCopy_aValueThatDoesNotCastLateIsDuckDBs(t *testing.T) {
	ctx := context.Background()
	db, u := mustOpen(t)
	duck := mustDuck(t)
	good := mustParquet(t, duck, snapQuery)
	late := strings.Replace(snapQuery, "(i * 1.5)::DECIMAL(14,2)", "CASE WHEN i = 4500 THEN 'lots' ELSE (i * 1.5)::VARCHAR END", 1)
	bad := mustParquet(t, duck, strings.Replace(late, "range(5)", "range(5000)", 1))
	if err := db.Update(ctx, func(tx *Tx) error { _, err := tx.LoadSnapshot(ctx, "permits", testCols, []string{good}); return err }); err != nil {
		t.Fatal(err)
	}
	err := db.Update(ctx, func(tx *Tx) error { _, err := tx.LoadSnapshot(ctx, "permits", testCols, []string{bad}); return err })
	if !errors.Is(err, storage.ErrBadData) || !strings.Contains(err.Error(), "Conversion Error") || !strings.Contains(err.Error(), "lots") {
		t.Fatalf("err = %v, want ErrBadData with DuckDB's Conversion Error about lots", err)
	}
	if n := count(t, mustReader(t, u), "SELECT count(*) FROM permits"); n != 5 {
		t.Fatalf("old table has %d rows, want 5", n)
	}
}

// A load cancelled while its rows stream to PostgreSQL ends soon with the
// context's error, DuckDB's query interrupted: the DuckDB of the exports
// runs the next one. (pgx ends the writer's session on a cancelled COPY.)
func TestCopy_cancelStopsTheExport(t *testing.T) {
	db, u := mustOpen(t)
	duck := mustDuck(t)
	large := mustParquet(t, duck, strings.Replace(snapQuery, "range(5)", "range(1000000)", 1))
	r := mustReader(t, u)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cancelled := make(chan time.Time, 1)
	go func() {
		for ctx.Err() == nil {
			var n int64
			// Cancelled once the COPY has rows.
			if err := r.QueryRow(context.Background(), "SELECT coalesce(max(tuples_processed), 0) FROM pg_stat_progress_copy").Scan(&n); err == nil && n > 0 {
				cancelled <- time.Now()
				cancel()
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	err := db.Update(ctx, func(tx *Tx) error { _, err := tx.LoadSnapshot(ctx, "permits", testCols, []string{large}); return err })
	var at time.Time
	select {
	case at = <-cancelled:
	default:
	}
	if !errors.Is(err, context.Canceled) || at.IsZero() {
		t.Fatalf("err = %v, want context.Canceled during the COPY", err)
	}
	if took := time.Since(at); took > 5*time.Second {
		t.Fatalf("the load ended %s after its context", took)
	}
	n, err := db.encode(context.Background(), "SELECT 7::BIGINT FROM range(3000)", nil, []encoding{{kind: kindInt8, oid: oidInt8}}, io.Discard)
	if err != nil || n != 3000 {
		t.Fatalf("the export after the cancelled one: %d rows, %v", n, err)
	}
}

// The same through the storage seam (a storage.DB on this engine, whose
// transactions are database/sql's on the writer's session): the
// context's end must not make database/sql roll the transaction back on
// a goroutine of its own while the COPY writes on the same session
// (pgx's connection is not safe for two at once: it panicked, "slow write
// timer already active"). The load ends with the context's error; the
// caller's rollback ends the transaction.
func TestCopy_cancelThroughTheSeamRollsBackOnce(t *testing.T) {
	duck := mustDuck(t)
	large := mustParquet(t, duck, strings.Replace(snapQuery, "range(5)", "range(1000000)", 1))
	for i := range 3 {
		db := mustOpenDB(t)
		ctx, cancel := context.WithCancel(context.Background())
		stop := time.AfterFunc(time.Duration(150+100*i)*time.Millisecond, cancel)
		err := db.Update(ctx, func(tx *storage.Tx) error {
			_, err := tx.Tables().LoadSnapshot(ctx, "permits", testCols, []string{large})
			return err
		})
		stop.Stop()
		cancel()
		if err == nil {
			t.Fatalf("run %d: the load of 1M rows ended before its context", i)
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("run %d: err = %v, want context.Canceled", i, err)
		}
	}
}

// stopAtFirstChunk cancels its export's context at the first chunk and
// refuses it, as the COPY's writer does when pgx sees the context end.
type stopAtFirstChunk struct{ cancel context.CancelFunc }

func (s stopAtFirstChunk) columns([]duckType) error { return nil }
func (s stopAtFirstChunk) chunk(bindings.DataChunk) error {
	s.cancel()
	return context.Canceled
}

// mustChunkDuck opens the exports' DuckDB, closed at the test's end.
func mustChunkDuck(t *testing.T) *chunkDuck {
	t.Helper()
	d, err := openChunkDuck(storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.close)
	return d
}

// rowCount counts an export's rows, and whether its result came at all.
type rowCount struct {
	described bool
	rows      int
}

func (n *rowCount) columns([]duckType) error { n.described = true; return nil }
func (n *rowCount) chunk(ch bindings.DataChunk) error {
	n.rows += int(bindings.DataChunkGetSize(ch))
	return nil
}

// An export whose context ends as it returns must not leave DuckDB's
// interrupt to land on the next export of the connection: the interrupt
// runs on a goroutine of its own, and the stream waits for it. Without
// the wait 7 to 51 of 200–300 exports after a cancelled one failed with
// DuckDB's "INTERRUPT Error: Interrupted!".
func TestChunkDuck_aCancelledExportLeavesTheNextOneAlone(t *testing.T) {
	d := mustChunkDuck(t)
	failed := 0
	for range 200 {
		ctx, cancel := context.WithCancel(context.Background())
		if err := d.stream(ctx, "SELECT i FROM range(10000000) t(i)", nil, stopAtFirstChunk{cancel}); !errors.Is(err, context.Canceled) {
			t.Fatalf("the cancelled export: %v, want context.Canceled", err)
		}
		var n rowCount
		if err := d.stream(context.Background(), "SELECT 7::BIGINT FROM range(3000)", nil, &n); err != nil || n.rows != 3000 {
			failed++
			t.Logf("the export after a cancelled one: %d rows, %v", n.rows, err)
		}
	}
	if failed > 0 {
		t.Fatalf("%d of 200 exports after a cancelled one failed", failed)
	}
}

// endedSilently is a context that has ended but never signals it (Done
// is nil, so context.AfterFunc never interrupts): the case of an
// interrupt the query's start cleared. Err is the end once ended says so.
type endedSilently struct {
	context.Context
	ended func() bool
}

func (c endedSilently) Done() <-chan struct{} { return nil }
func (c endedSilently) Err() error {
	if c.ended() {
		return context.Canceled
	}
	return nil
}

// An export whose context ended before its query started, the interrupt
// cleared by that start, stops before the result is read; one whose
// context ends while it reads stops at the next chunk.
func TestChunkDuck_anExportAsksItsContextAsWellAsInterrupting(t *testing.T) {
	d := mustChunkDuck(t)
	const query = "SELECT i FROM range(10000000) t(i)"
	var n rowCount
	ended := endedSilently{context.Background(), func() bool { return true }}
	if err := d.stream(ended, query, nil, &n); !errors.Is(err, context.Canceled) || n.described || n.rows != 0 {
		t.Fatalf("an export of an ended context: %v, its result read: %v, %d rows; want context.Canceled and nothing read", err, n.described, n.rows)
	}
	n = rowCount{}
	endsAtTheFirstChunk := endedSilently{context.Background(), func() bool { return n.rows > 0 }}
	if err := d.stream(endsAtTheFirstChunk, query, nil, &n); !errors.Is(err, context.Canceled) || n.rows > 2048 {
		t.Fatalf("an export whose context ended at its first chunk: %d rows, %v; want one chunk (2,048 rows) and context.Canceled", n.rows, err)
	}
}
