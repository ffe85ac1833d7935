package emulator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// miniClient is a watch client written from docs/wire.md section 9 alone,
// over HTTP, holding rows as JSON: the independent check of WatchTruth.
type miniClient struct {
	tb      testing.TB
	em      *Emulator
	ds      string
	version int
	cols    map[string]string // name → column object JSON
	rows    map[string]map[string]json.RawMessage
	reloads int
}

func (c *miniClient) columnsNow() map[string]string {
	var d watchDatasetBody
	if st := apiGet(c.tb, c.em, "/v1/datasets/"+c.ds, &d); st != 200 {
		c.tb.Fatalf("dataset: %d", st)
	}
	out := map[string]string{}
	for _, raw := range d.Columns {
		var col struct{ Name string }
		json.Unmarshal(raw, &col)
		out[col.Name] = string(raw)
	}
	return out
}

func (c *miniClient) reload() {
	c.reloads++
	v, rows := allRows(c.tb, c.em, c.ds, "limit=2")
	c.version, c.cols, c.rows = v, c.columnsNow(), map[string]map[string]json.RawMessage{}
	for _, r := range rows {
		c.rows[str(c.tb, r["_ploti_record_id"])] = r
	}
}

// sync brings the client to the latest version: readings 1 to 6.
func (c *miniClient) sync() {
	var d watchDatasetBody
	apiGet(c.tb, c.em, "/v1/datasets/"+c.ds, &d)
	latest := *d.Version
	if latest == c.version {
		return
	}
	var chain []changesBody // newest first
	for n := latest; n != c.version; {
		st, ch := getChanges(c.tb, c.em, c.ds, n, "&limit=3")
		if st == 410 || (st == 200 && ch.ChangeLog != "recorded") {
			c.reload()
			return
		}
		if st != 200 {
			c.tb.Fatalf("changes v%d: %d", n, st)
		}
		ch.Changes = allChanges(c.tb, c.em, c.ds, n, 3)
		chain = append(chain, ch)
		if ch.PreviousVersion == nil || *ch.PreviousVersion < c.version {
			c.reload() // a gap
			return
		}
		n = *ch.PreviousVersion
	}
	now := c.columnsNow()
	for name, col := range c.cols {
		if now[name] != col {
			c.reload()
			return
		}
	}
	touched := map[string]json.RawMessage{} // id → row when given
	for i := len(chain) - 1; i >= 0; i-- {
		for _, e := range chain[i].Changes {
			switch e.Change {
			case "removed":
				delete(c.rows, e.RecordID)
				delete(touched, e.RecordID)
				continue
			case "renamed":
				delete(c.rows, *e.PreviousRecordID)
			}
			touched[e.RecordID] = e.Row
		}
	}
	var ids []string
	for id, row := range touched {
		delete(c.rows, id)
		if len(row) > 0 && string(row) != "null" {
			var r map[string]json.RawMessage
			json.Unmarshal(row, &r)
			c.rows[id] = r
		} else {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for len(ids) > 0 {
		n := min(len(ids), MaxRowIDs)
		_, rows := allRows(c.tb, c.em, c.ds, "limit=2&ids="+url.QueryEscape(strings.Join(ids[:n], ",")))
		for _, r := range rows {
			c.rows[str(c.tb, r["_ploti_record_id"])] = r
		}
		ids = ids[n:]
	}
	for _, r := range c.rows { // reading 5: an added column is null where no change touched
		for name := range now {
			if _, ok := r[name]; !ok {
				r[name] = json.RawMessage("null")
			}
		}
	}
	c.version, c.cols = latest, now
}

// canon renders rows (by id) as sorted canonical JSON lines.
func canon(tb testing.TB, rows map[string]map[string]json.RawMessage) string {
	var lines []string
	for _, r := range rows {
		var b bytes.Buffer
		m := map[string]any{}
		for k, v := range r {
			var x any
			d := json.NewDecoder(bytes.NewReader(v))
			d.UseNumber()
			if err := d.Decode(&x); err != nil {
				tb.Fatalf("%s: %v", v, err)
			}
			m[k] = x
		}
		enc := json.NewEncoder(&b)
		enc.Encode(m)
		lines = append(lines, strings.TrimSpace(b.String()))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// truthRows reads a truth file back as rows JSON, rendered as the API does.
func truthRows(tb testing.TB, em *Emulator, path string, version int) map[string]map[string]json.RawMessage {
	tb.Helper()
	em.mu.Lock()
	cols := em.datasets[dsPermits].plotiNum(version).feed.schema.Columns
	em.mu.Unlock()
	db := testDB(tb)
	out := map[string]map[string]json.RawMessage{}
	for _, line := range queryRows(tb, db, fmt.Sprintf("SELECT %s FROM read_parquet(%s) t", rowObject(cols, "t"), lit(path))) {
		b, err := geoFixup([]byte(line))
		if err != nil {
			tb.Fatal(err)
		}
		var r map[string]json.RawMessage
		if err := json.Unmarshal(b, &r); err != nil {
			tb.Fatalf("%s: %v", b, err)
		}
		out[str(tb, r["_ploti_record_id"])] = r
	}
	return out
}

func unitsColumns() []Column { return append(permitColumns(), Column{Name: "units", Type: "integer"}) }

func withUnits(r Row, n int) Row { r["units"] = n; return r }

// TestWatchTruth checks WatchPlan and WatchTruth against the mini client
// over HTTP, through each reading of docs/wire.md 9: merges (a MINOR column
// stays null where nothing touched it), several versions behind, renames,
// and each cause of a whole reload.
func TestWatchTruth(t *testing.T) {
	p := func(n, val string) Row { return permit(n, val, -81) }
	base := []Row{p("P-1", "1.00"), p("P-2", "2.00"), p("P-3", "3.00"), p("P-4", "4.00")}
	cases := []struct {
		name string
		// steps publish versions; the client syncs after the ones marked.
		steps   []func(t *testing.T, em *Emulator) bool
		reloads string // WatchPlan's Reload per sync, "m" merge "r" reload
		reason  string // a word of the last reload's reason
	}{
		{"minor column added", []func(*testing.T, *Emulator) bool{
			func(t *testing.T, em *Emulator) bool {
				mustPublish(t, em, []Row{withUnits(p("P-1", "1.50"), 5), withUnits(p("P-2", "2.00"), 6), withUnits(p("P-3", "3.00"), 7),
					withUnits(p("P-4", "4.00"), 8)}, WithSchema(unitsColumns(), []string{"permit_number"}))
				return true
			}}, "m", ""},
		{"three versions behind", []func(*testing.T, *Emulator) bool{
			func(t *testing.T, em *Emulator) bool {
				mustPublish(t, em, []Row{p("P-1", "1.10"), p("P-2", "2.00"), p("P-3", "3.00"), p("P-5", "5.00")})
				return false
			},
			func(t *testing.T, em *Emulator) bool {
				mustPublish(t, em, []Row{p("P-1", "1.20"), p("P-2", "2.00"), p("P-3", "3.00"), p("P-6", "6.00")}, WithRenames("rec_d1_2"))
				return false
			},
			func(t *testing.T, em *Emulator) bool {
				mustPublish(t, em, []Row{p("P-1", "1.30"), p("P-2", "2.20"), p("P-5", "5.50"), p("P-6", "6.00")}, SkipReview())
				return true
			}}, "m", ""},
		{"counts_only between", []func(*testing.T, *Emulator) bool{
			func(t *testing.T, em *Emulator) bool {
				mustPublish(t, em, base[:3], WithChangeLog("counts_only"), SkipReview())
				return false
			},
			func(t *testing.T, em *Emulator) bool { mustPublish(t, em, base); return true }}, "r", "counts_only"},
		{"gap", []func(*testing.T, *Emulator) bool{
			func(t *testing.T, em *Emulator) bool { mustPublish(t, em, append(base, p("P-5", "5.00"))); return true },
			func(t *testing.T, em *Emulator) bool {
				mustPublish(t, em, base, WithPreviousPlotiVersion(11))
				return true
			}}, "mr", "chain"},
		{"410 in the chain", []func(*testing.T, *Emulator) bool{
			func(t *testing.T, em *Emulator) bool {
				mustPublish(t, em, append(base, p("P-5", "5.00")))
				em.Advance(Retention + time.Hour)
				return false
			},
			func(t *testing.T, em *Emulator) bool { mustPublish(t, em, base); return true }}, "r", "90 days"},
		{"column removed", []func(*testing.T, *Emulator) bool{
			func(t *testing.T, em *Emulator) bool {
				var rows []Row
				for _, r := range base {
					rows = append(rows, Row{"permit_number": r["permit_number"], "valuation": "7.00", "issued": r["issued"]})
				}
				mustPublish(t, em, rows, WithSchema(permitColumns()[:3], []string{"permit_number"}), SkipReview())
				return true
			}}, "r", "removed"},
		{"then merge after a reload", []func(*testing.T, *Emulator) bool{
			func(t *testing.T, em *Emulator) bool {
				mustPublish(t, em, base, WithChangeLog("full_refresh"))
				return true
			},
			func(t *testing.T, em *Emulator) bool {
				mustPublish(t, em, []Row{p("P-1", "9.00"), p("P-2", "2.00"), p("P-3", "3.00")}, SkipReview())
				return true
			}},
			"rm", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			em := mustEmulator(t)
			r0 := mustPublish(t, em, base)
			c := &miniClient{tb: t, em: em, ds: dsPermits}
			c.reload()
			c.reloads = 0
			history := []int{r0.PlotiVersion}
			for _, step := range tc.steps {
				if step(t, em) {
					c.sync()
					history = append(history, latestPloti(em, dsPermits))
				}
			}
			plan, err := em.WatchPlan(dsPermits, history)
			if err != nil {
				t.Fatal(err)
			}
			var kinds, reason string
			for _, st := range plan {
				if st.Reload {
					kinds, reason = kinds+"r", st.Reason
				} else {
					kinds += "m"
				}
			}
			if kinds != tc.reloads || !strings.Contains(reason, tc.reason) || c.reloads != strings.Count(kinds, "r") {
				t.Fatalf("plan %s (%q), client reloaded %d times; want %s (%q)", kinds, reason, c.reloads, tc.reloads, tc.reason)
			}
			truth, err := em.WatchTruth(t.Context(), dsPermits, history)
			if err != nil {
				t.Fatal(err)
			}
			last := history[len(history)-1]
			if got, want := canon(t, c.rows), canon(t, truthRows(t, em, truth, last)); got != want {
				t.Fatalf("mini client holds\n%s\nWatchTruth says\n%s", got, want)
			}
			now, err := em.WatchRows(t.Context(), dsPermits)
			if err != nil {
				t.Fatal(err)
			}
			_, served := allRows(t, em, dsPermits, "")
			byID := map[string]map[string]json.RawMessage{}
			for _, r := range served {
				byID[str(t, r["_ploti_record_id"])] = r
			}
			if got, want := canon(t, truthRows(t, em, now, last)), canon(t, byID); got != want {
				t.Fatalf("WatchRows\n%s\nrows serves\n%s", got, want)
			}
			if same := canon(t, c.rows) == canon(t, byID); same == (tc.name == "minor column added") {
				t.Fatalf("the merged client equals a whole read: %v (only the MINOR case differs)", same)
			}
		})
	}
}

// latestPloti is a dataset's current Ploti version.
func latestPloti(em *Emulator, datasetID string) int {
	vs := em.PlotiVersions(datasetID)
	return vs[len(vs)-1].Version
}

// DiffWatch finds a table equal to WatchTruth, and one row off.
func TestDiffWatch(t *testing.T) {
	em := mustEmulator(t)
	r1 := mustPublish(t, em, []Row{permit("P-1", "1.00", -81), permit("P-2", "2.00", -81)})
	r2 := mustPublish(t, em, []Row{withUnits(permit("P-1", "1.50", -81), 3), withUnits(permit("P-2", "2.00", -81), 4)},
		WithSchema(unitsColumns(), []string{"permit_number"}))
	hist := []int{r1.PlotiVersion, r2.PlotiVersion}
	truth, err := em.WatchTruth(t.Context(), dsPermits, hist)
	if err != nil {
		t.Fatal(err)
	}
	db := testDB(t)
	if _, err := db.Exec("CREATE TABLE w AS SELECT * FROM read_parquet(" + lit(truth) + ")"); err != nil {
		t.Fatal(err)
	}
	if x, m, err := em.DiffWatch(t.Context(), db, "w", dsPermits, hist); err != nil || x != 0 || m != 0 {
		t.Fatalf("DiffWatch of the truth: %d %d %v", x, m, err)
	}
	if got := queryRows(t, db, "SELECT permit_number, units FROM w ORDER BY 1"); !reflect.DeepEqual(got, []string{"P-1|3", "P-2|∅"}) {
		t.Fatalf("truth after a MINOR merge: %v", got)
	}
	db.Exec("UPDATE w SET units = 4 WHERE permit_number = 'P-2'")
	if x, m, err := em.DiffWatch(t.Context(), db, "w", dsPermits, hist); err != nil || x != 1 || m != 1 {
		t.Fatalf("DiffWatch of a row off: %d %d %v", x, m, err)
	}
	if x, m, err := em.DiffWatch(t.Context(), db, "w", dsPermits, []int{r2.PlotiVersion}); err != nil || x != 0 || m != 0 {
		t.Fatalf("DiffWatch against a whole read: %d %d %v", x, m, err)
	}
	for _, bad := range [][]int{nil, {r2.PlotiVersion, r1.PlotiVersion}, {r1.PlotiVersion, 12}} {
		if _, err := em.WatchTruth(t.Context(), dsPermits, bad); err == nil {
			t.Fatalf("WatchTruth(%v): no error", bad)
		}
	}
}
