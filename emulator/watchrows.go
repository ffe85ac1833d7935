package emulator

// GET /v1/datasets/{id}/rows (docs/wire.md section 9): a Ploti version's
// rows, paged and pinned to the version of the first page; or, with ids=,
// the rows of those ids.
//
// A whole read is served from the version's rows as JSON lines, which
// DuckDB writes in one COPY on the first whole read of the version; a page
// is then a run of lines from a byte offset that the cursor carries, so a
// read of a million rows costs one COPY and a sequential read of the file.
// The file is deterministic, so an evicted one is written again with the
// same offsets.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Limits of the rows endpoint.
const (
	// MaxRowIDs is how many ids one rows read may name.
	MaxRowIDs = 500
	// rowsCacheKeep is how many versions' rows files a dataset keeps.
	rowsCacheKeep = 2
)

// rowsPage is what a rows answer needs, read under e.mu.
type rowsPage struct {
	d     *dataset
	pv    *plotiVersion // nil before the first version
	cols  []Column
	rel   string // the version's rows (a SQL relation)
	ids   []string
	key   string
	pos   int64
	limit int
}

func (e *Emulator) getWatchRows(r *http.Request) (int, any, error) {
	q := r.URL.Query()
	limit, err := intParam(q.Get("limit"), 500, 1000)
	if err != nil {
		return 0, nil, err
	}
	ids, err := parseIDs(q.Get("ids"), q.Has("ids"))
	if err != nil {
		return 0, nil, err
	}
	pg, err := e.planRows(r, ids, limit)
	if err != nil {
		return 0, nil, err
	}
	var b bytes.Buffer
	b.Grow(4096 + limit*320) // a page of typical rows without regrowing
	fmt.Fprintf(&b, `{"datasetId":%s,"version":%s,"columns":`, jsonString(pg.d.spec.ID), versionJSON(pg.pv))
	cols, _ := json.Marshal(columnsJSON(pg.cols, false))
	b.Write(cols)
	b.WriteString(`,"rows":[`)
	next := ""
	switch {
	case pg.pv == nil:
	case ids != nil:
		next, err = e.rowsByIDs(r.Context(), &b, pg)
	default:
		next, err = e.rowsWhole(r.Context(), &b, pg)
	}
	if err != nil {
		return 0, nil, err
	}
	b.WriteString(`],"nextCursor":`)
	if next == "" {
		b.WriteString("null}")
	} else {
		fmt.Fprintf(&b, "%s}", jsonString(next))
	}
	out, err := geoFixup(b.Bytes())
	if err == nil {
		out, err = e.spoilWatch(pg.d.spec.ID, "rows", out)
	}
	if err != nil {
		return 0, nil, fmt.Errorf("rows %s: %w", pg.d.spec.ID, err)
	}
	return http.StatusOK, json.RawMessage(out), nil
}

// parseIDs reads ids=a,b,c: at most MaxRowIDs, none empty, each once (in
// the order given). It returns nil when there is no ids parameter.
func parseIDs(s string, has bool) ([]string, error) {
	if !has {
		return nil, nil
	}
	parts := strings.Split(s, ",")
	if len(parts) > MaxRowIDs {
		return nil, errInvalid(fmt.Sprintf("ids names %d records; at most %d", len(parts), MaxRowIDs))
	}
	seen := map[string]bool{}
	out := []string{}
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" {
			return nil, errInvalid("ids must be record ids separated by commas, none empty")
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out, nil
}

func versionJSON(pv *plotiVersion) string {
	if pv == nil {
		return "null"
	}
	return strconv.Itoa(pv.num)
}

func (e *Emulator) planRows(r *http.Request, ids []string, limit int) (rowsPage, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	d, err := e.watchDataset(r)
	if err != nil {
		return rowsPage{}, err
	}
	pg := rowsPage{d: d, ids: ids, key: idsKey(ids), limit: limit, pv: d.latestPloti()}
	if c := r.URL.Query().Get("cursor"); c != "" {
		cur, ok := parseWatchCursor(c, "r", d.spec.ID)
		var pv *plotiVersion
		if ok {
			pv = d.plotiNum(cur.version)
		}
		switch {
		case pv == nil:
			return rowsPage{}, errInvalid("the cursor is not one this dataset's rows gave")
		case cur.ids != pg.key:
			return rowsPage{}, errInvalid("the cursor belongs to a read of other ids: send the same ids with it")
		case ids != nil && cur.pos > int64(len(ids)):
			return rowsPage{}, errInvalid("the cursor is past the ids")
		case !pv.supersededAt.IsZero() && !e.nowLocked().Before(pv.supersededAt.Add(RowsCursorLife)):
			return rowsPage{}, errExpired(fmt.Sprintf("version %d was superseded more than an hour ago: read the dataset again from the start", pv.num))
		}
		pg.pv, pg.pos = pv, cur.pos
	}
	if pg.pv == nil {
		pg.cols, _ = d.columnsNow()
		return pg, nil
	}
	pg.cols, pg.rel = pg.pv.feed.schema.Columns, e.versionRel(pg.pv.feed)
	return pg, nil
}

// rowsByIDs appends the rows of the page's ids that exist, in the order
// the ids were given, and returns the next cursor ("" at the end).
func (e *Emulator) rowsByIDs(ctx context.Context, b *bytes.Buffer, pg rowsPage) (string, error) {
	end := min(pg.pos+int64(pg.limit), int64(len(pg.ids)))
	page := pg.ids[pg.pos:end]
	found := map[string]string{}
	if len(page) > 0 {
		rows, err := e.db.QueryContext(ctx, fmt.Sprintf("SELECT s._ploti_record_id, %s FROM %s s WHERE s._ploti_record_id IN (%s)",
			rowObject(pg.cols, "s"), pg.rel, litList(page)))
		if err != nil {
			return "", fmt.Errorf("read rows %s v%d: %w", pg.d.spec.ID, pg.pv.num, err)
		}
		defer rows.Close()
		for rows.Next() {
			var id, row string
			if err := rows.Scan(&id, &row); err != nil {
				return "", fmt.Errorf("read rows %s v%d: %w", pg.d.spec.ID, pg.pv.num, err)
			}
			found[id] = row
		}
		if err := rows.Err(); err != nil {
			return "", fmt.Errorf("read rows %s v%d: %w", pg.d.spec.ID, pg.pv.num, err)
		}
	}
	first := true
	for _, id := range page {
		if row, ok := found[id]; ok {
			if !first {
				b.WriteByte(',')
			}
			first = false
			b.WriteString(row)
		}
	}
	if end >= int64(len(pg.ids)) {
		return "", nil
	}
	return watchCursor{kind: "r", dataset: pg.d.spec.ID, version: pg.pv.num, pos: end, ids: pg.key}.String(), nil
}

// rowsWhole appends up to limit rows of the version from the cursor's byte
// offset and returns the next cursor ("" at the end).
func (e *Emulator) rowsWhole(ctx context.Context, b *bytes.Buffer, pg rowsPage) (string, error) {
	for attempt := 0; ; attempt++ {
		path, err := e.rowsFile(ctx, pg)
		if err != nil {
			return "", err
		}
		f, err := os.Open(path)
		if errors.Is(err, fs.ErrNotExist) && attempt == 0 {
			continue // evicted since: write it again
		}
		if err != nil {
			return "", fmt.Errorf("read rows %s v%d: %w", pg.d.spec.ID, pg.pv.num, err)
		}
		defer f.Close()
		next, err := readLines(f, b, pg.pos, pg.limit)
		if err != nil {
			if errors.Is(err, errBadOffset) {
				return "", errInvalid("the cursor is not one this dataset's rows gave")
			}
			return "", fmt.Errorf("read rows %s v%d: %w", pg.d.spec.ID, pg.pv.num, err)
		}
		if next < 0 {
			return "", nil
		}
		return watchCursor{kind: "r", dataset: pg.d.spec.ID, version: pg.pv.num, pos: next}.String(), nil
	}
}

var errBadOffset = errors.New("offset is not at a line start")

// readLines appends up to limit lines of f from byte offset off to b,
// separated by commas and without their newlines, and returns the offset
// after them, or -1 when that is the end of the file.
func readLines(f *os.File, b *bytes.Buffer, off int64, limit int) (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := st.Size()
	if off > size {
		return 0, errBadOffset
	}
	if off > 0 {
		var prev [1]byte
		if _, err := f.ReadAt(prev[:], off-1); err != nil || prev[0] != '\n' {
			return 0, errBadOffset
		}
	}
	br := bufio.NewReaderSize(io.NewSectionReader(f, off, size-off), 1<<18)
	for n := 0; n < limit && off < size; n++ {
		if n > 0 {
			b.WriteByte(',')
		}
		for {
			chunk, err := br.ReadSlice('\n')
			off += int64(len(chunk))
			if err == nil {
				b.Write(chunk[:len(chunk)-1])
				break
			}
			b.Write(chunk)
			if err != bufio.ErrBufferFull {
				if err == io.EOF {
					break
				}
				return 0, err
			}
		}
	}
	if off >= size {
		return -1, nil
	}
	return off, nil
}

// promotedRowsLocked tells whether a version just released was promoted
// for a dataset the member watches, and gives what writing its rows needs.
func (e *Emulator) promotedRowsLocked(d *dataset, v *version) (rowsPage, bool) {
	pv := d.latestPloti()
	if pv == nil || pv.feed != v || len(e.watchersLocked(d.spec.ID)) == 0 || e.openErr(d) != nil {
		return rowsPage{}, false
	}
	return rowsPage{d: d, pv: pv, cols: v.schema.Columns, rel: e.versionRel(v)}, true
}

// prepareRows writes a watched dataset's new version's rows file at once,
// so that a client's first whole read does not wait for it. It is best
// effort: a failure leaves the work to the first read, which reports it.
func (e *Emulator) prepareRows(ctx context.Context, pg rowsPage) {
	e.rowsFile(ctx, pg)
}

// rowsFile returns the version's rows as JSON lines, writing them when
// missing, and evicts the files of the dataset's versions used least
// recently beyond rowsCacheKeep.
func (e *Emulator) rowsFile(ctx context.Context, pg rowsPage) (string, error) {
	rc := &pg.pv.rows
	rc.mu.Lock()
	rel := fmt.Sprintf("watch/%s/p%d-rows.jsonl", pg.d.tag, pg.pv.num)
	path := e.abs(rel)
	rc.used = e.rowsUse.Add(1)
	if _, err := os.Stat(path); rc.rel == "" || err != nil {
		if err := e.writeRows(ctx, pg, path); err != nil {
			rc.mu.Unlock()
			return "", err
		}
		rc.rel = rel
	}
	rc.mu.Unlock()
	e.evictRows(pg.d)
	return path, nil
}

func (e *Emulator) writeRows(ctx context.Context, pg rowsPage, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write rows %s v%d: %w", pg.d.spec.ID, pg.pv.num, err)
	}
	tmp := path + ".tmp"
	q := fmt.Sprintf("COPY (SELECT %s FROM %s s) TO %s (FORMAT json)", rowSelect(pg.cols, "s"), pg.rel, lit(tmp))
	if _, err := e.db.ExecContext(ctx, q); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write rows %s v%d: %w", pg.d.spec.ID, pg.pv.num, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write rows %s v%d: %w", pg.d.spec.ID, pg.pv.num, err)
	}
	return nil
}

// evictRows removes the rows files of a dataset's versions beyond the
// rowsCacheKeep used most recently. A read that has its file open keeps
// reading it; the next page of an evicted version writes it again.
func (e *Emulator) evictRows(d *dataset) {
	e.mu.Lock()
	pvs := append([]*plotiVersion(nil), d.plotiVersions...)
	e.mu.Unlock()
	var kept []*plotiVersion
	for _, pv := range pvs {
		pv.rows.mu.Lock()
		if pv.rows.rel != "" {
			kept = append(kept, pv)
		}
		pv.rows.mu.Unlock()
	}
	for len(kept) > rowsCacheKeep {
		oldest := 0
		for i, pv := range kept {
			if pv.rows.usedAt() < kept[oldest].rows.usedAt() {
				oldest = i
			}
		}
		pv := kept[oldest]
		pv.rows.mu.Lock()
		if pv.rows.rel != "" {
			os.Remove(e.abs(pv.rows.rel))
			pv.rows.rel = ""
		}
		pv.rows.mu.Unlock()
		kept = append(kept[:oldest], kept[oldest+1:]...)
	}
}

func (rc *rowsCache) usedAt() int64 {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.used
}
