package emulator

// GET /v1/datasets/{id}/changes (docs/wire.md section 9): one Ploti
// version's change list, paged, with rows only while it is the latest.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// watchCursor is the position a changes or rows cursor stands for. Cursors
// are opaque to clients: base64 of "<kind>|<dataset>|<version>|<pos>|<ids>".
type watchCursor struct {
	kind    string // "c" (changes) or "r" (rows)
	dataset string
	version int
	pos     int64  // changes: entries read; rows: bytes read, or ids read
	ids     string // rows: the key of the ids read ("" for a whole read)
}

func (c watchCursor) String() string {
	s := fmt.Sprintf("%s|%s|%d|%d|%s", c.kind, c.dataset, c.version, c.pos, c.ids)
	return base64.RawURLEncoding.EncodeToString([]byte(s))
}

func parseWatchCursor(s, kind, dataset string) (watchCursor, bool) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return watchCursor{}, false
	}
	parts := strings.Split(string(b), "|")
	if len(parts) != 5 || parts[0] != kind || parts[1] != dataset {
		return watchCursor{}, false
	}
	v, err1 := strconv.Atoi(parts[2])
	pos, err2 := strconv.ParseInt(parts[3], 10, 64)
	if err1 != nil || err2 != nil || v < 1 || pos < 0 {
		return watchCursor{}, false
	}
	return watchCursor{kind: kind, dataset: dataset, version: v, pos: pos, ids: parts[4]}, true
}

// idsKey identifies a list of ids in a rows cursor.
func idsKey(ids []string) string {
	if ids == nil {
		return ""
	}
	sum := sha256.Sum256([]byte(strings.Join(ids, "\n")))
	return hex.EncodeToString(sum[:6])
}

func jsonString(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}

// changesPage is what a changes answer needs, read under e.mu.
type changesPage struct {
	datasetID string
	pv        *plotiVersion
	latest    bool
	from      int64
	limit     int
	path      string // the change list's file, "" when not recorded
}

func (e *Emulator) getWatchChanges(r *http.Request) (int, any, error) {
	q := r.URL.Query()
	limit, err := intParam(q.Get("limit"), 500, 1000)
	if err != nil {
		return 0, nil, err
	}
	if q.Get("version") == "" {
		return 0, nil, errInvalid("version is required: the Ploti version whose changes to list")
	}
	n, err := strconv.Atoi(q.Get("version"))
	if err != nil || n < 1 {
		return 0, nil, errInvalid("version must be a positive integer")
	}
	pg, err := e.planChanges(r, n, limit)
	if err != nil {
		return 0, nil, err
	}
	return e.renderChanges(r.Context(), pg)
}

func (e *Emulator) planChanges(r *http.Request, n, limit int) (changesPage, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	d, err := e.watchDataset(r)
	if err != nil {
		return changesPage{}, err
	}
	pv := d.plotiNum(n)
	if pv == nil {
		return changesPage{}, errNotFound(fmt.Sprintf("dataset %s has no version %d", d.spec.ID, n))
	}
	if pv.promotedAt.Before(e.nowLocked().Add(-Retention)) {
		return changesPage{}, errExpired(fmt.Sprintf("version %d is older than 90 days: read the dataset again with rows", n))
	}
	pg := changesPage{datasetID: d.spec.ID, pv: pv, latest: pv == d.latestPloti(), limit: limit}
	if c := r.URL.Query().Get("cursor"); c != "" {
		cur, ok := parseWatchCursor(c, "c", d.spec.ID)
		if !ok || cur.version != n || cur.pos > pv.entries {
			return changesPage{}, errInvalid("the cursor is not one this dataset's changes of version " + strconv.Itoa(n) + " gave")
		}
		pg.from = cur.pos
	}
	if pv.changeLog == ChangeLogRecorded && pv.changes != nil {
		pg.path = e.abs(pv.changes.rel)
	}
	return pg, nil
}

// renderChanges reads the page's entries and writes the answer.
func (e *Emulator) renderChanges(ctx context.Context, pg changesPage) (int, any, error) {
	pv := pg.pv
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"datasetId":%s,"version":%d,"previousVersion":%s,"promotedAt":%s,"changeLog":%s,`,
		jsonString(pg.datasetID), pv.num, intJSON(pv.prev), jsonString(pv.promotedAt.Format(time.RFC3339)), jsonString(pv.changeLog))
	fmt.Fprintf(&b, `"counts":{"added":%d,"changed":%d,"removed":%d,"renamed":%d},"changes":[`,
		pv.counts.added, pv.counts.changed, pv.counts.removed, pv.counts.renamed)
	next := "null"
	if pg.path != "" {
		end := min(pg.from+int64(pg.limit), pv.entries)
		if err := e.changeEntries(ctx, &b, pg, end); err != nil {
			return 0, nil, err
		}
		if end < pv.entries {
			next = string(jsonString(watchCursor{kind: "c", dataset: pg.datasetID, version: pv.num, pos: end}.String()))
		}
	}
	fmt.Fprintf(&b, `],"nextCursor":%s}`, next)
	out, err := geoFixup(b.Bytes())
	if err == nil {
		out, err = e.spoilWatch(pg.datasetID, "changes", out)
	}
	if err != nil {
		return 0, nil, fmt.Errorf("changes %s v%d: %w", pg.datasetID, pv.num, err)
	}
	return http.StatusOK, json.RawMessage(out), nil
}

// changeEntries appends the entries from pg.from (exclusive) to end
// (inclusive) as JSON objects.
func (e *Emulator) changeEntries(ctx context.Context, b *bytes.Buffer, pg changesPage, end int64) error {
	rows, err := e.db.QueryContext(ctx, fmt.Sprintf(`SELECT change, record_id, previous_record_id, row FROM %s
WHERE _ord > %d AND _ord <= %d ORDER BY _ord`, parquetList([]string{pg.path}), pg.from, end))
	if err != nil {
		return fmt.Errorf("read changes %s v%d: %w", pg.datasetID, pg.pv.num, err)
	}
	defer rows.Close()
	first := true
	for rows.Next() {
		var change, id string
		var prev, row sql.NullString
		if err := rows.Scan(&change, &id, &prev, &row); err != nil {
			return fmt.Errorf("read changes %s v%d: %w", pg.datasetID, pg.pv.num, err)
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		fmt.Fprintf(b, `{"change":%s,"recordId":%s`, jsonString(change), jsonString(id))
		if prev.Valid {
			fmt.Fprintf(b, `,"previousRecordId":%s`, jsonString(prev.String))
		}
		if change != "removed" {
			// docs: "The added and changed rows of the latest version come with the row itself."
			b.WriteString(`,"row":`)
			if pg.latest && row.Valid {
				b.WriteString(row.String)
			} else {
				b.WriteString("null")
			}
		}
		b.WriteByte('}')
	}
	return rows.Err()
}

func intJSON(p *int) string {
	if p == nil {
		return "null"
	}
	return strconv.Itoa(*p)
}
