package emulator

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// findVersion finds a built version of a dataset.
func (e *Emulator) findVersion(datasetID string, num int) (*dataset, *version, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	d := e.datasets[datasetID]
	if d == nil {
		return nil, nil, fmt.Errorf("dataset %s: %w", datasetID, ErrNotFound)
	}
	v := d.versionNum(num)
	if v == nil {
		return nil, nil, fmt.Errorf("%s v%d: %w", datasetID, num, ErrNotFound)
	}
	return d, v, nil
}

// SnapshotFiles returns the local paths of a version's snapshot parts, in
// order, for a caller that loads them with DuckDB directly.
func (e *Emulator) SnapshotFiles(ctx context.Context, datasetID string, version int) ([]string, error) {
	_, v, err := e.findVersion(datasetID, version)
	if err != nil {
		return nil, fmt.Errorf("snapshot files: %w", err)
	}
	out := make([]string, len(v.snapshot))
	for i, f := range v.snapshot {
		out[i] = e.abs(f.rel)
	}
	return out, nil
}

// ChangesFile returns the local path of a version's changes file, or "" when
// it has none (a first version or a resync).
func (e *Emulator) ChangesFile(ctx context.Context, datasetID string, version int) (string, error) {
	_, v, err := e.findVersion(datasetID, version)
	if err != nil {
		return "", fmt.Errorf("changes file: %w", err)
	}
	if v.changes == nil {
		return "", nil
	}
	return e.abs(v.changes.rel), nil
}

// IDMapFile returns the local path of a version's id map, or "" when it has
// none (any version but a record_ids_changed resync).
func (e *Emulator) IDMapFile(ctx context.Context, datasetID string, version int) (string, error) {
	_, v, err := e.findVersion(datasetID, version)
	if err != nil {
		return "", fmt.Errorf("id map file: %w", err)
	}
	if v.idMap == nil {
		return "", nil
	}
	return e.abs(v.idMap.rel), nil
}

// Truth returns a Parquet file of exactly the rows a subscriber that followed
// the feed must hold at a released version: _ploti_record_id,
// _ploti_place_id, then the schema's columns, ordered by record id. A version
// delivered by resync is its snapshot; one delivered as updated is the
// previous truth with its changes applied, so a column a MINOR change added
// is null in the rows that did not change.
func (e *Emulator) Truth(ctx context.Context, datasetID string, version int) (string, error) {
	e.pubMu.Lock()
	defer e.pubMu.Unlock()
	d, v, err := e.findVersion(datasetID, version)
	if err != nil {
		return "", fmt.Errorf("truth: %w", err)
	}
	if v.state != "released" {
		return "", fmt.Errorf("truth %s v%d: %w: version is %s", datasetID, version, ErrNotFound, v.state)
	}
	return e.truth(ctx, d, v)
}

func (e *Emulator) truth(ctx context.Context, d *dataset, v *version) (string, error) {
	path := filepath.Join(e.dir, "truth", d.tag, fmt.Sprintf("v%d.parquet", v.num))
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("truth: %w", err)
	}
	cols := []string{"_ploti_record_id", "_ploti_place_id"}
	for _, c := range v.schema.Columns {
		cols = append(cols, fmt.Sprintf("CAST(%s AS %s) AS %s", ident(c.Name), duckType(c), ident(c.Name)))
	}
	sel := strings.Join(cols, ", ")
	snaps := make([]string, len(v.snapshot))
	for i, f := range v.snapshot {
		snaps[i] = e.abs(f.rel)
	}
	var q string
	if v.resyncReason != "" || v.prev == nil || v.changes == nil {
		q = fmt.Sprintf("SELECT %s FROM %s ORDER BY _ploti_record_id", sel, parquetList(snaps))
	} else {
		e.mu.Lock()
		prev := d.versionNum(*v.prev)
		e.mu.Unlock()
		prevPath, err := e.truth(ctx, d, prev)
		if err != nil {
			return "", err
		}
		old := []string{"t._ploti_record_id", "t._ploti_place_id"}
		for _, c := range v.schema.Columns {
			src := "NULL"
			if _, ok := findColumn(prev.schema.Columns, c.Name); ok {
				src = "t." + ident(c.Name)
			}
			old = append(old, fmt.Sprintf("CAST(%s AS %s) AS %s", src, duckType(c), ident(c.Name)))
		}
		ch := parquetList([]string{e.abs(v.changes.rel)})
		q = fmt.Sprintf(`SELECT * FROM (
SELECT %[1]s FROM %[2]s t WHERE NOT EXISTS (SELECT 1 FROM %[3]s c WHERE c._ploti_record_id = t._ploti_record_id)
UNION ALL
SELECT %[4]s FROM %[3]s WHERE _ploti_change IN ('added', 'changed')) ORDER BY _ploti_record_id`,
			strings.Join(old, ", "), parquetList([]string{prevPath}), ch, sel)
	}
	if _, err := e.db.ExecContext(ctx, fmt.Sprintf("COPY (%s) TO %s (FORMAT parquet)", q, lit(path))); err != nil {
		os.Remove(path)
		return "", fmt.Errorf("truth %s v%d: %w", d.spec.ID, v.num, err)
	}
	return path, nil
}
