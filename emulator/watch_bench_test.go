package emulator

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

var benchUnwatched = flag.Bool("unwatched", false, "BenchmarkWatchRows_whole: leave the dataset unwatched")

// benchRows publishes n rows of the permit schema through PublishQuery.
func benchRows(b *testing.B, em *Emulator, n int) Release {
	b.Helper()
	q := fmt.Sprintf(`SELECT 'P-' || i AS permit_number, (i * 1.25)::DECIMAL(14,2) AS valuation, DATE '2026-01-01' + (i %% 300)::INT AS issued,
	TIMESTAMPTZ '2026-01-01 00:00:00+00' + to_seconds(i) AS updated_at, ['a', 'b'] AS tags, i %% 2 = 0 AS final,
	'{"k": 1}' AS extra, 'POINT (' || (-81 - i / 1e7) || ' 28.5)' AS geometry FROM range(%d) r(i)`, n)
	rel, err := em.PublishQuery(b.Context(), dsPermits, q)
	if err != nil {
		b.Fatal(err)
	}
	return rel
}

// BenchmarkWatchRows_whole reads a 1M-row watched dataset whole through
// rows (limit 1000) over loopback HTTP; with -unwatched the first page
// writes the rows file.
// go test ./emulator -run XXX -bench WatchRows -benchtime 1x
func BenchmarkWatchRows_whole(b *testing.B) {
	em := mustEmulator(b)
	const n = 1_000_000
	if !*benchUnwatched {
		em.Watch(dsPermits)
	}
	benchRows(b, em, n)
	b.ResetTimer()
	for range b.N {
		// a new version each round, so that the rows file is written anew
		b.StopTimer()
		em.Advance(time.Second)
		benchRows(b, em, n)
		b.StartTimer()
		start, size, pages := time.Now(), 0, 0
		cursor := ""
		for {
			req, _ := http.NewRequest("GET", em.URL()+"/v1/datasets/"+dsPermits+"/rows?limit=1000&cursor="+url.QueryEscape(cursor), nil)
			req.Header.Set("Authorization", "Bearer "+em.APIKey())
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Fatalf("page %d: %d %s", pages, resp.StatusCode, body)
			}
			size += len(body)
			pages++
			if pages == 1 {
				b.Logf("first page in %s", time.Since(start))
			}
			i := bytes.LastIndex(body, []byte(`"nextCursor":"`))
			if i < 0 {
				break
			}
			rest := body[i+len(`"nextCursor":"`):]
			cursor = string(rest[:bytes.IndexByte(rest, '"')])
		}
		el := time.Since(start)
		b.ReportMetric(float64(n)/el.Seconds(), "rows/s")
		b.ReportMetric(float64(size)/float64(n), "B/row")
		b.Logf("%d pages, %d MB in %s", pages, size>>20, el)
	}
}

// BenchmarkWatchPublish_recorded publishes a version that changes ~100
// rows of a 1M-row dataset: what the watch side adds to a publish.
func BenchmarkWatchPublish_recorded(b *testing.B) {
	em := mustEmulator(b)
	const n = 1_000_000
	benchRows(b, em, n)
	b.ResetTimer()
	for i := range b.N {
		q := fmt.Sprintf(`SELECT 'P-' || i AS permit_number, (i * 1.25 + CASE WHEN i %% 10000 = %d THEN 1 ELSE 0 END)::DECIMAL(14,2) AS valuation,
	DATE '2026-01-01' + (i %% 300)::INT AS issued, TIMESTAMPTZ '2026-01-01 00:00:00+00' + to_seconds(i) AS updated_at, ['a', 'b'] AS tags,
	i %% 2 = 0 AS final, '{"k": 1}' AS extra, 'POINT (' || (-81 - i / 1e7) || ' 28.5)' AS geometry FROM range(%d) r(i)`, i%10000, n)
		rel, err := em.PublishQuery(b.Context(), dsPermits, q)
		if err != nil {
			b.Fatal(err)
		}
		// 100 rows move each round, and the 100 of the round before move back
		if want := min(i+1, 2) * 100; rel.Changed != int64(want) || rel.PlotiVersion == 0 {
			b.Fatalf("changed %d, want %d (Ploti version %d)", rel.Changed, want, rel.PlotiVersion)
		}
	}
}

// BenchmarkWatchRows_ids reads 500 rows by id from a 1M-row dataset.
func BenchmarkWatchRows_ids(b *testing.B) {
	em := mustEmulator(b)
	benchRows(b, em, 1_000_000)
	var ids []string
	for i := range 500 {
		ids = append(ids, fmt.Sprintf("rec_d1_%d", 1+i*1999))
	}
	q := "ids=" + strings.Join(ids, ",") + "&limit=500"
	b.ResetTimer()
	for range b.N {
		st, p := getRows(b, em, dsPermits, q)
		if st != 200 || len(p.Rows) != 500 {
			b.Fatalf("%d, %d rows", st, len(p.Rows))
		}
	}
}
