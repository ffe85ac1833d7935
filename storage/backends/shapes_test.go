package backends

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/postgres"
)

var errRollback = errors.New("rolled back on purpose")

// Shapes that PostGIS's binary input refuses but the DuckDB file keeps (a
// ring of three points, a ring not closed, a line of one point) load,
// merge and arrive in watched rows as in the file, vertex for vertex; the
// dataset used to fail on them.
func TestTx_shapesPostGISBinaryInputRefuses(t *testing.T) {
	ctx := context.Background()
	db, u := mustOpen(t)
	duck := mustDuck(t)
	cols := []ploti.Column{col("g", ploti.TypeGeometry), col("n", ploti.TypeInteger)}
	shapes := []string{"POLYGON ((0 0, 4 0, 4 4, 0 0), (1 1, 2 1, 1 1))", "POLYGON ((0 0, 4 0, 4 4, 0 4))",
		"LINESTRING (1 1)", "MULTIPOLYGON (((0 0, 1 0, 0 0)))", "POINT (1 2)"}
	var vals []string
	for i, s := range shapes {
		vals = append(vals, fmt.Sprintf("('r%d', %s)", i, storage.Literal(s)))
	}
	rows := "(VALUES " + strings.Join(vals, ", ") + ") v(id, s)"
	snap := mustParquet(t, duck, "SELECT id AS _ploti_record_id, NULL AS _ploti_place_id, ST_AsWKB(s::GEOMETRY) AS g, length(s) AS n FROM "+rows)
	changes := mustParquet(t, duck, `SELECT * FROM (VALUES
		('r4', 'changed', NULL, ST_AsWKB('POLYGON ((0 0, 1 1, 0 0))'::GEOMETRY), 1),
		('r9', 'added', NULL, ST_AsWKB('LINESTRING (3 3)'::GEOMETRY), NULL))
		v(_ploti_record_id, _ploti_change, _ploti_place_id, g, n)`)
	watched := mustNDJSON(t, `{"_ploti_record_id":"w1","g":{"type":"Polygon","coordinates":[[[0,0],[4,0],[4,4],[0,0]],[[1,1],[2,1],[1,1]]]},"n":7}`,
		`{"_ploti_record_id":"w2","g":{"type":"LineString","coordinates":[[1,1]]}}`)
	next := mustNDJSON(t, `{"_ploti_record_id":"w2","g":{"type":"Polygon","coordinates":[[[0,0],[4,0],[4,4]]]}}`,
		`{"_ploti_record_id":"w3","g":{"type":"LineString","coordinates":[[2,2]]}}`)
	m := storage.WatchMerge{DatasetID: "dw", Table: "w", Columns: cols, RowsBefore: -1,
		Held: []storage.Touch{{ID: "w2", Version: 2, Change: ploti.ChangeChanged}},
		New:  []storage.Touch{{ID: "w3", Version: 2, Change: ploti.ChangeAdded}},
		Rows: []storage.RowSource{{Path: next, IDs: []string{"w2", "w3"}}},
		Log:  []storage.Touch{{ID: "w2", Version: 2, Change: ploti.ChangeChanged}, {ID: "w3", Version: 2, Change: ploti.ChangeAdded}}}
	r := mustReader(t, u)
	steps := []struct {
		name  string
		table string
		do    func(storage.Tables) error
	}{
		{"load", "s", func(tb storage.Tables) error { _, err := tb.LoadSnapshot(ctx, "s", cols, []string{snap}); return err }},
		{"merge", "s", func(tb storage.Tables) error {
			_, err := tb.MergeChanges(ctx, "ds", 2, "s", cols, changes, -1)
			return err
		}},
		{"rows", "w", func(tb storage.Tables) error { _, err := tb.LoadRows(ctx, "w", cols, []string{watched}); return err }},
		{"watch merge", "w", func(tb storage.Tables) error { _, err := tb.MergeWatch(ctx, m); return err }},
	}
	for _, s := range steps {
		if err := duck.Update(ctx, func(tx *storage.Tx) error { return s.do(tx.Tables()) }); err != nil {
			t.Fatalf("%s in the DuckDB file: %v", s.name, err)
		}
		if err := db.Update(ctx, func(tx *postgres.Tx) error {
			if err := s.do(tx); err != nil {
				return err
			}
			// The staging ended its savepoint: none is left open, a
			// subtransaction deep, to the commit.
			if _, err := tx.Exec(ctx, "SAVEPOINT probe; ROLLBACK TO SAVEPOINT ploti_copy"); err == nil {
				return fmt.Errorf("the savepoint ploti_copy is still open after the %s", s.name)
			}
			return errRollback
		}); err != errRollback {
			t.Fatalf("%s in PostgreSQL: %v", s.name, err)
		}
		if err := db.Update(ctx, func(tx *postgres.Tx) error { return s.do(tx) }); err != nil {
			t.Fatalf("%s in PostgreSQL: %v", s.name, err)
		}
		sameRows(t, duck, r, s.table, cols)
	}
	if n := count(t, r, "SELECT count(*) FROM public.s WHERE ST_SRID(g) <> 4326"); n != 0 {
		t.Fatalf("%d staged geometries not in SRID 4326", n)
	}
}
