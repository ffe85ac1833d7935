package bench

import (
	"context"
	"fmt"
	"math"
)

// rawWay is how DuckDB alone applies the log's changes files.
type rawWay int

const (
	// aPage: a transaction a page of the log, DuckDB's settings as they
	// are (its threads, its 16MB checkpoint_threshold), as the engine ran
	// before its walk grouped pages.
	aPage rawWay = iota
	// batchedAsTheWalk: as the engine's walk commits them (replica's
	// group commit): a transaction for ten pages (5,000 events, the
	// walk's default bound), one DuckDB thread, the automatic checkpoint
	// held back to a 512 MB WAL and one CHECKPOINT at the end, with FSST
	// left out of it as the engine leaves it out of a checkpoint of
	// small merges (storage/duckdb's light.go). The ceiling the engine's
	// catch-up is measured against.
	batchedAsTheWalk
)

// batchPages is how many 500-event pages one batched transaction holds:
// replica.DefaultBatchEvents of them.
const batchPages = 10

// rawMergePages applies the changes files with DuckDB alone, the way way
// says, under eo's settings, then closes the file.
func rawMergePages(ctx context.Context, path string, pages [][][2]string, way rawWay, eo engineOpts) (cost, error) {
	perTx, setup, end := 1, []string(nil), []string(nil)
	if way == batchedAsTheWalk {
		perTx = batchPages
		setup = []string{"SET threads = 1", "SET checkpoint_threshold = '512MB'"}
		end = []string{"SET disabled_compression_methods = 'fsst'", "CHECKPOINT"}
	}
	return timedPlain(ctx, path, eo, setup, func(exec func(string) error) error {
		for from := 0; from < len(pages); from += perTx {
			if err := rawMergeTx(exec, pages[from:min(len(pages), from+perTx)]); err != nil {
				return err
			}
		}
		for _, q := range end {
			if err := exec(q); err != nil {
				return err
			}
		}
		return nil
	})
}

// rawMergeTx applies the pages' changes files in one transaction; pages
// without a file are no transaction at all.
func rawMergeTx(exec func(string) error, pages [][][2]string) error {
	began := false
	for _, page := range pages {
		for _, m := range page {
			if !began {
				if err := exec("BEGIN"); err != nil {
					return err
				}
				began = true
			}
			for _, q := range rawMergeSQL(m[0], m[1]) {
				if q == "BEGIN" || q == "COMMIT" {
					continue
				}
				if err := exec(q); err != nil {
					return fmt.Errorf("raw merge of %s: %w", m[1], err)
				}
			}
		}
	}
	if !began {
		return nil
	}
	return exec("COMMIT")
}

// manyBatchedLine reports the catch-up against DuckDB alone batched as the
// walk (many_vs_raw_batched): the engine as the catch-up's other lines
// carry it (in a process of its own when there is a binary to run).
func (r *run) manyBatchedLine(size string, events int, t *logTurns) {
	eng := t.eng
	if len(t.apart.Wall.Runs) > 0 {
		eng = t.apart
	}
	ratio, cpu := ratios(eng, t.batched)
	r.rep.add(Line{What: "7c. the same against DuckDB alone batched as the walk (10 pages a transaction, one thread, one checkpoint at the end without FSST): the ceiling", Size: size,
		Engine: eng.String(),
		Versus: fmt.Sprintf("DuckDB alone batched: %s; %.0f events a second", t.batched.String(), float64(events)/t.batched.Wall.Median().Seconds()),
		Ratio:  ratio, CPURatio: cpu})
	r.rep.Summary["many_vs_raw_batched"] = ratio
	if math.IsNaN(ratio) {
		delete(r.rep.Summary, "many_vs_raw_batched")
	}
}
