package replica

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
)

// sighting is what an in-process reader saw of one dataset in one
// transaction: the registry's version and columns, and the table's rows.
type sighting struct {
	datasetID string
	version   int
	cols      []ploti.Column
	rows      int64
	sum       string
}

// normExpr renders a column as text the same way for the table and the
// truth file.
func normExpr(col, typ string) string {
	q := storage.Ident(col)
	switch typ {
	case "timestamp":
		return fmt.Sprintf("CAST(CAST(%s AS TIMESTAMPTZ) AS VARCHAR)", q)
	case "geometry":
		return fmt.Sprintf("ST_AsText(%s)", q)
	}
	return fmt.Sprintf("CAST(%s AS VARCHAR)", q)
}

// rowsAndSum counts rel's rows and sums a hash of each row's columns;
// columns in absent are taken as null.
func rowsAndSum(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, rel string, cols []ploti.Column, absent map[string]bool) (int64, string, error) {
	exprs := []string{normExpr(storage.ColRecordID, "string"), normExpr(storage.ColPlaceID, "string")}
	for _, c := range cols {
		if absent[c.Name] {
			exprs = append(exprs, "NULL::VARCHAR")
			continue
		}
		exprs = append(exprs, normExpr(c.Name, c.Type.Type))
	}
	var n int64
	var sum string
	err := q.QueryRowContext(ctx, fmt.Sprintf("SELECT count(*), coalesce(sum(hash(%s)), 0)::VARCHAR FROM %s", strings.Join(exprs, ", "), rel)).Scan(&n, &sum)
	return n, sum, err
}

// look reads, in one transaction, every dataset's registry row
// and its table.
func look(ctx context.Context, db *sql.DB) ([]sighting, error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, "SELECT dataset_id, table_name, coalesce(version, 0), coalesce(columns::VARCHAR, '[]') FROM _ploti.datasets ORDER BY 1")
	if err != nil {
		return nil, err
	}
	type reg struct {
		id, table, cols string
		version         int
	}
	var regs []reg
	for rows.Next() {
		var g reg
		if err := rows.Scan(&g.id, &g.table, &g.version, &g.cols); err != nil {
			rows.Close()
			return nil, err
		}
		regs = append(regs, g)
	}
	rows.Close()
	var out []sighting
	for _, g := range regs {
		if g.version == 0 {
			continue
		}
		s := sighting{datasetID: g.id, version: g.version}
		if err := json.Unmarshal([]byte(g.cols), &s.cols); err != nil {
			return nil, err
		}
		if s.rows, s.sum, err = rowsAndSum(ctx, tx, storage.AsGeometry(testGeometry, g.table, s.cols), s.cols, nil); err != nil {
			return nil, fmt.Errorf("read %s at v%d: %w", g.id, g.version, err)
		}
		out = append(out, s)
	}
	return out, tx.Commit()
}

// docs/design.md, "in-process readers see the last committed state while a sync
// runs" and invariant 1: readers of Replica.DB() in a loop while syncs load,
// merge, reload and alter tables; every state a reader saw, registry and
// table in one transaction, is exactly some released version's truth.
func TestReplica_DBReadersSeeWholeVersions(t *testing.T) {
	onlyInAFile(t, "this reader test (DuckDB SQL; storage/postgres's TestReaders_neverWaitNorSeeHalfATable is the database's)")
	ctx := context.Background()
	em := mustEmulator(t)
	sub, permits, parcels := seedTwo(t, em)
	r := mustOpen(t, em, sub, "", fastRetries)

	stop := make(chan struct{})
	var mu sync.Mutex
	var seen []sighting
	var readErrs []error
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				s, err := look(ctx, r.DB())
				mu.Lock()
				if err != nil {
					readErrs = append(readErrs, err)
				}
				seen = append(seen, s...)
				mu.Unlock()
			}
		}()
	}
	mustSync(t, r)
	for round := 1; round <= 4; round++ {
		var opts []emulator.PublishOption
		switch round {
		case 2: // a snapshot swap
			must(t, em.ReRelease("ds_permits", round))
		case 3: // a MINOR change: a column added, then the merge
			cols := append(append([]emulator.Column{}, permitCols...), emulator.Column{Name: "units", Type: "integer"})
			opts = append(opts, emulator.WithSchema(cols, []string{"permit"}))
		case 4: // new record ids and an id map
			opts = append(opts, emulator.WithReplacedIDs(0.5))
		}
		rows := permits(round)
		if round >= 3 {
			rows = withUnits(rows, 3)
		}
		_, err := em.Publish(ctx, "ds_permits", rows, opts...)
		must(t, err)
		_, err = em.Publish(ctx, "ds_parcels", parcels(round))
		must(t, err)
		mustSync(t, r)
	}
	close(stop)
	wg.Wait()

	assertMatchesTruth(t, r, em, "ds_permits", 5)
	assertMatchesTruth(t, r, em, "ds_parcels", 5)
	want := map[string][3]any{}
	versions := map[string]map[int]int{}
	aheadOfMerge := 0
	for _, s := range seen {
		k := fmt.Sprintf("%s v%d %d columns", s.datasetID, s.version, len(s.cols))
		w, ok := want[k]
		if !ok {
			truth, err := em.Truth(ctx, s.datasetID, s.version)
			must(t, err)
			// A MINOR change adds its column when its schema_changed event
			// is read, before the version's changes merge: the rows are
			// still the held version's, the new column null
			// (schemas-and-holds.txt).
			absent := map[string]bool{}
			for _, c := range s.cols {
				var n int
				must(t, r.DB().QueryRowContext(ctx, "SELECT count(*) FROM (DESCRIBE SELECT * FROM read_parquet("+storage.Literal(truth)+")) WHERE column_name = ?", c.Name).Scan(&n))
				absent[c.Name] = n == 0
			}
			n, sum, err := rowsAndSum(ctx, r.DB(), "read_parquet("+storage.Literal(truth)+")", s.cols, absent)
			must(t, err)
			w = [3]any{n, sum, len(absent) > 0 && slices.Contains(slices.Collect(maps.Values(absent)), true)}
			want[k] = w
		}
		if w[2].(bool) {
			aheadOfMerge++
		}
		if s.rows != w[0].(int64) || s.sum != w[1].(string) {
			t.Fatalf("a reader saw %s at v%d as %d rows (sum %s); v%d's truth is %d rows (sum %s): not a whole version",
				s.datasetID, s.version, s.rows, s.sum, s.version, w[0], w[1])
		}
		if versions[s.datasetID] == nil {
			versions[s.datasetID] = map[int]int{}
		}
		versions[s.datasetID][s.version]++
	}
	for _, err := range readErrs {
		// Before the first load commits there is no table to read; nothing else may fail.
		if !strings.Contains(err.Error(), "does not exist") {
			t.Fatalf("a reader failed: %v", err)
		}
	}
	t.Logf("%d sightings of whole versions (%d of them with a MINOR column added ahead of its merge; %d reads before the first tables): permits %v, parcels %v",
		len(seen), aheadOfMerge, len(readErrs), versions["ds_permits"], versions["ds_parcels"])
	if len(versions["ds_permits"]) < 3 || len(versions["ds_parcels"]) < 3 {
		t.Fatalf("the readers saw too few versions to tell: %v", versions)
	}
}
