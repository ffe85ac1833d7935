package emulator

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Row is one record for Publish, keyed by schema column name. Values:
// string; int, int64 and other integers; float64; a decimal as a string
// ("123.45") or float64; bool; time.Time for date and timestamp; geometry as
// WKT text or WKB []byte; a list as []any (or any slice); json as a string or
// any value json.Marshal takes. A missing column is null. System columns are
// not given: the emulator assigns them.
type Row map[string]any

// PublishOption changes how Publish builds a version.
type PublishOption func(*publishConfig)

type publishConfig struct {
	parts      int
	cols       []Column
	key        []string
	newSchema  bool
	skipReview bool
	hold       string
	replace    float64
	rename     []string // record ids that continue under new ids
	changeLog  string   // the watch side's changeLog; "" for the natural one
	plotiPrev  int      // the Ploti version the watch side measures from; 0: the latest
}

// replacing tells whether the version gives records new ids.
func (c *publishConfig) replacing() bool { return c.replace > 0 || len(c.rename) > 0 }

// Parts splits the version's snapshot into n Parquet files (default 1).
func Parts(n int) PublishOption {
	return func(c *publishConfig) { c.parts = max(1, n) }
}

// WithSchema gives the version a new schema: its columns and key columns.
// Later versions keep it.
func WithSchema(columns []Column, keyColumns []string) PublishOption {
	return func(c *publishConfig) {
		c.cols, c.key, c.newSchema = cloneColumns(columns), slices.Clone(keyColumns), true
	}
}

// SkipReview releases the version even when a check would hold it (a
// breaking schema change, too few rows, ids turning over). A key_violation
// and an explicit Hold still hold it.
func SkipReview() PublishOption {
	return func(c *publishConfig) { c.skipReview = true }
}

// Hold holds the version for review with reason, one of "schema_change",
// "key_violation", "row_drop", "identity_ambiguous", "identity_unresolved",
// for the holds that have no natural trigger in the emulator.
func Hold(reason string) PublishOption {
	return func(c *publishConfig) { c.hold = reason }
}

// WithReplacedIDs gives a fraction (0 < fraction <= 1) of the matched
// records new ids, as Ploti's staff replacing ids does: the version is a
// resync_required with reason record_ids_changed and an id map. The records
// replaced are the first ones in input order.
func WithReplacedIDs(fraction float64) PublishOption {
	return func(c *publishConfig) { c.replace, c.skipReview = fraction, true }
}

// WithRenames makes the records that carry these ids in the last released
// version continue under new ids: on the watch side they are listed as
// renamed in a recorded changes answer (previousRecordId the old id); Data
// Feeds sends the version as a resync_required with reason
// record_ids_changed and an id map, as for WithReplacedIDs.
func WithRenames(recordIDs ...string) PublishOption {
	return func(c *publishConfig) { c.rename, c.skipReview = slices.Clone(recordIDs), true }
}

// WithChangeLog sets the changeLog the watch side's changes answer gives
// for the version: "recorded", "counts_only", "ids_changed",
// "full_refresh" or "first". Only recorded lists the rows (it needs a
// previous Ploti version). Any other non-empty text is served as it is,
// with no rows, for a client's bad-input tests. Without it the watch side
// says first for a dataset's first Ploti version, ids_changed for
// WithReplacedIDs and ReplaceIDs, and recorded otherwise (renames and
// schema changes included).
func WithChangeLog(kind string) PublishOption {
	return func(c *publishConfig) { c.changeLog = kind }
}

// WithPreviousPlotiVersion measures the version's watch side from an
// older Ploti version of the dataset instead of the latest: its
// previousVersion is n and its changes are measured from n's rows, so a
// client holding a version between n and the latest finds a gap in the
// previousVersion chain. Data Feeds is unaffected.
func WithPreviousPlotiVersion(n int) PublishOption {
	return func(c *publishConfig) { c.plotiPrev = n }
}

// Release describes a version Publish built.
type Release struct {
	// DatasetID and Version name the version.
	DatasetID string
	Version   int
	// PreviousVersion is the last released version it is measured from (nil
	// for a first version).
	PreviousVersion *int
	// SchemaVersion is its schema version, SchemaBump "", "minor" or "major".
	SchemaVersion string
	SchemaBump    string
	// Held tells that the version waits on staff, HoldReason why:
	// schema_change, key_violation, row_drop, identity_ambiguous or
	// identity_unresolved.
	Held       bool
	HoldReason string
	// ResyncRequired and ResyncReason tell how subscribers receive it.
	ResyncRequired bool
	ResyncReason   string
	// RowCount is its rows; Added, Changed and Removed count its changes
	// (zero for a resync).
	RowCount, Added, Changed, Removed int64
	// EventIDs are the events the publish appended, in order, over all
	// subscriptions.
	EventIDs []string
	// PlotiVersion is the watch side's number for the version once
	// released (0 while held): Ploti's own, not the Data Feeds Version.
	PlotiVersion int
}

// Publish builds a new version of a dataset from Go rows and, unless a hold
// applies, releases it to every subscription that delivers the dataset.
// Until a subscription first includes the dataset, Data Feeds shows none
// of its versions (status not_built); the first subscription to include it
// gets the newest as resync_required first_version (feedfirst.go).
func (e *Emulator) Publish(ctx context.Context, datasetID string, rows []Row, opts ...PublishOption) (Release, error) {
	return e.publish(ctx, datasetID, opts, func(p *buildPlan) (string, error) {
		src, err := stageRows(ctx, e.db, p.table("raw"), p.cols, rows)
		if err != nil {
			return "", err
		}
		return src, nil
	})
}

// PublishQuery builds a new version from a DuckDB SELECT that yields the
// schema's columns by name (geometry as GEOMETRY or WKT text, lists as lists
// or list text). Matching, ids, changes and files all stay in DuckDB SQL, so
// it suits millions of rows.
func (e *Emulator) PublishQuery(ctx context.Context, datasetID, selectSQL string, opts ...PublishOption) (Release, error) {
	return e.publish(ctx, datasetID, opts, func(p *buildPlan) (string, error) {
		var sel []string
		for _, c := range p.cols {
			sel = append(sel, fmt.Sprintf("CAST(%s AS %s) AS %s", ident(c.Name), duckType(c), ident(c.Name)))
		}
		return fmt.Sprintf("SELECT %s FROM (%s)", strings.Join(sel, ", "), selectSQL), nil
	})
}

// buildPlan is what a build needs, taken from the model under e.mu.
type buildPlan struct {
	d       *dataset
	num     int
	cols    []Column
	key     []string
	schema  *schemaDoc
	base    *version
	baseRel string
	match   *version // the version whose rows new rows are matched to
	mRel    string   // its relation
	counter int64
	parts   int
	place   string
	resync  string
	wbase   *plotiVersion // the Ploti version the watch side measures from
	wRel    string        // its rows
	cfg     publishConfig
	dir     string // absolute directory of the version's files
	rel     string // the same, relative to e.dir, slash-separated
}

func (p *buildPlan) table(kind string) string {
	return fmt.Sprintf("%s_%s_v%d", kind, p.d.tag, p.num)
}

func (e *Emulator) publish(ctx context.Context, datasetID string, opts []PublishOption, stage func(*buildPlan) (string, error)) (Release, error) {
	e.pubMu.Lock()
	defer e.pubMu.Unlock()
	p, err := e.plan(datasetID, opts)
	if err != nil {
		return Release{}, err
	}
	v, err := e.build(ctx, p, stage)
	if err != nil {
		e.dropStage(p)
		e.dropTables(p.table("v"), p.table("ch"))
		return Release{}, fmt.Errorf("publish %s v%d: %w", datasetID, p.num, err)
	}
	e.mu.Lock()
	rel := e.commitLocked(p, v)
	pg, watched := e.promotedRowsLocked(p.d, v)
	e.mu.Unlock()
	if watched {
		e.prepareRows(ctx, pg)
	}
	e.logPublish(rel)
	return rel, nil
}

// logPublish logs a publish at info: the version, its rows and how it
// goes out.
func (e *Emulator) logPublish(rel Release) {
	attrs := []any{"dataset", rel.DatasetID, "version", rel.Version, "rows", rel.RowCount}
	switch {
	case rel.Held:
		attrs = append(attrs, "held", rel.HoldReason)
	case rel.ResyncRequired:
		attrs = append(attrs, "resync", rel.ResyncReason)
	default:
		attrs = append(attrs, "added", rel.Added, "changed", rel.Changed, "removed", rel.Removed)
	}
	e.log.Info("emulator: published", attrs...)
}

func (e *Emulator) plan(datasetID string, opts []PublishOption) (*buildPlan, error) {
	cfg := publishConfig{parts: 1}
	for _, o := range opts {
		o(&cfg)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, ErrClosed
	}
	d := e.datasets[datasetID]
	if d == nil {
		return nil, fmt.Errorf("publish %s: %w", datasetID, ErrNotFound)
	}
	wbase, err := planWatch(d, cfg)
	if err != nil {
		return nil, fmt.Errorf("publish %s: %w", datasetID, err)
	}
	if cfg.newSchema {
		if err := validateSchema(cfg.cols, cfg.key); err != nil {
			return nil, fmt.Errorf("publish %s: %w", datasetID, err)
		}
		d.spec.Columns, d.spec.KeyColumns = cfg.cols, cfg.key
	}
	d.lastNum++
	p := &buildPlan{
		d: d, num: d.lastNum, cols: d.spec.Columns, key: d.spec.KeyColumns, base: d.released,
		counter: d.idCounter, parts: cfg.parts, place: e.filedPlace(d), cfg: cfg, wbase: wbase,
	}
	if wbase != nil {
		p.wRel = e.versionRel(wbase.feed)
	}
	p.schema = d.schemaFor(p.cols, p.key)
	p.rel = fmt.Sprintf("files/%s/v%d", d.tag, p.num)
	p.dir = filepath.Join(e.dir, filepath.FromSlash(p.rel))
	if p.base != nil {
		p.baseRel = e.versionRel(p.base)
		p.match, p.mRel = p.base, p.baseRel
		if x := d.matchVersion; x != nil {
			p.match, p.mRel = x, e.versionRel(x)
		}
	}
	p.resync = e.resyncReason(d, p, e.nowLocked())
	return p, nil
}

// versionRel is a SQL relation holding a version's rows: its table while
// kept, else its snapshot files.
func (e *Emulator) versionRel(v *version) string {
	if v.table != "" {
		return v.table
	}
	paths := make([]string, len(v.snapshot))
	for i, f := range v.snapshot {
		paths[i] = e.abs(f.rel)
	}
	return parquetList(paths)
}

func (e *Emulator) abs(rel string) string { return filepath.Join(e.dir, filepath.FromSlash(rel)) }

// resyncReason picks the version's resync reason in the docs' order of
// precedence, or "" when it arrives as updated.
func (e *Emulator) resyncReason(d *dataset, p *buildPlan, now time.Time) string {
	ch := p.schema.Change
	changed := p.base != nil && p.schema.Version != p.base.schema.Version
	prevGone := p.base != nil && (d.forceResync || p.base.filesGone || p.base.builtAt.Before(now.Add(-Retention)))
	switch {
	case p.base != nil && p.cfg.replacing():
		return "record_ids_changed"
	case p.base == nil:
		return "first_version"
	case prevGone && !changed:
		return "previous_unavailable"
	case changed && ch != nil && ch.KeyDiff && (ch.Bump == "major" || prevGone):
		// "as schema_changed, when the change includes the key columns":
		// a MINOR change on its own (a key added where there was none)
		// arrives as updated.
		return "key_columns_changed"
	case changed && ch != nil && ch.Bump == "major", changed && prevGone:
		return "schema_changed"
	}
	return ""
}

// dropStage drops a build's staging tables and view.
func (e *Emulator) dropStage(p *buildPlan) {
	e.db.Exec("DROP VIEW IF EXISTS " + p.table("stg"))
	e.dropTables(p.table("raw"), p.table("stgt"), p.table("ids"))
}

func (e *Emulator) dropTables(names ...string) {
	for _, n := range names {
		e.db.Exec("DROP TABLE IF EXISTS " + n)
	}
}

// build runs the SQL: stage, match to the base version, assign ids, compute
// changes, write the files. It touches no model state.
func (e *Emulator) build(ctx context.Context, p *buildPlan, stage func(*buildPlan) (string, error)) (*version, error) {
	src, err := stage(p)
	if err != nil {
		return nil, err
	}
	stg := p.table("stg")
	// The staged rows keep the source's order (DuckDB preserves insertion
	// order), so rowid + 1 numbers them without a window over all rows.
	if _, err := e.db.ExecContext(ctx, fmt.Sprintf("CREATE OR REPLACE TABLE %s AS %s", p.table("stgt"), src)); err != nil {
		return nil, fmt.Errorf("stage: %w", err)
	}
	if err := e.compact(ctx); err != nil {
		return nil, fmt.Errorf("stage: %w", err)
	}
	if _, err := e.db.ExecContext(ctx, fmt.Sprintf("CREATE OR REPLACE VIEW %s AS SELECT rowid + 1 AS _ord, * FROM %s", stg, p.table("stgt"))); err != nil {
		return nil, fmt.Errorf("stage: %w", err)
	}
	e.dropTables(p.table("raw"))
	v := &version{num: p.num, schema: p.schema, resyncReason: p.resync, table: p.table("v")}
	if p.base != nil {
		n := p.base.num
		v.prev = &n
	}
	if v.rowCount, err = queryInt(ctx, e.db, "SELECT count(*) FROM "+stg); err != nil {
		return nil, fmt.Errorf("count rows: %w", err)
	}
	if err := e.checkKey(ctx, p, v); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return nil, fmt.Errorf("make version dir: %w", err)
	}
	if err := e.assignIDs(ctx, p, v); err != nil {
		return nil, err
	}
	e.dropStage(p)
	if err := e.compact(ctx); err != nil {
		return nil, fmt.Errorf("version table: %w", err)
	}
	if p.base != nil && p.resync == "" {
		if err := e.computeChanges(ctx, p, v); err != nil {
			return nil, err
		}
	}
	if err := e.buildWatch(ctx, p, v); err != nil {
		return nil, err
	}
	if err := e.writeFiles(ctx, p, v); err != nil {
		return nil, err
	}
	// Later builds read this version's rows from its snapshot files.
	e.dropVersionTable(v)
	return v, nil
}

// checkKey counts duplicate and null keys (a key_violation).
func (e *Emulator) checkKey(ctx context.Context, p *buildPlan, v *version) error {
	if len(p.key) == 0 {
		return nil
	}
	keys := make([]string, len(p.key))
	nulls := make([]string, len(p.key))
	for i, k := range p.key {
		c, _ := findColumn(p.cols, k)
		keys[i] = cmpExpr(c, "s")
		nulls[i] = "s." + ident(k) + " IS NULL"
	}
	q := fmt.Sprintf(`SELECT (SELECT count(*) FROM (SELECT 1 FROM %[1]s s GROUP BY %[2]s HAVING count(*) > 1)) +
		(SELECT count(*) FROM %[1]s s WHERE %[3]s)`, p.table("stg"), strings.Join(keys, ", "), strings.Join(nulls, " OR "))
	n, err := queryInt(ctx, e.db, q)
	if err != nil {
		return fmt.Errorf("check key: %w", err)
	}
	v.keyViolations = n
	return nil
}

// matchExprs pairs the expressions that match a new row (alias s) to a base
// row (alias b): the new key, else the old key, else (unkeyed) every shared
// column of the same type. uniq tells that both sides are known to be unique
// on them (the same key, and the new rows have no key violation), so a plain
// equi-join pairs them.
func matchExprs(p *buildPlan, v *version) (newE, oldE []string, uniq bool) {
	if p.match == nil {
		return nil, nil, false
	}
	bcols := p.match.schema.Columns
	pair := func(names []string) bool {
		var ns, ol []string
		for _, k := range names {
			nc, ok1 := findColumn(p.cols, k)
			oc, ok2 := findColumn(bcols, k)
			if !ok1 || !ok2 {
				return false
			}
			if sameType(nc, oc) {
				ns, ol = append(ns, cmpExpr(nc, "s")), append(ol, cmpExpr(oc, "b"))
			} else {
				ns, ol = append(ns, textExpr(nc, "s")), append(ol, textExpr(oc, "b"))
			}
		}
		newE, oldE = ns, ol
		return true
	}
	if len(p.key) > 0 {
		if pair(p.key) {
			return newE, oldE, v.keyViolations == 0 && sameSet(p.key, p.match.schema.Key)
		}
		if pair(p.match.schema.Key) {
			return newE, oldE, false
		}
		return nil, nil, false
	}
	var shared []string
	for _, c := range p.cols {
		if oc, ok := findColumn(bcols, c.Name); ok && sameType(c, oc) {
			shared = append(shared, c.Name)
		}
	}
	if len(shared) == 0 || !pair(shared) {
		return nil, nil, false
	}
	return newE, oldE, false
}

func sameSet(a, b []string) bool {
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

// assignIDs matches the staged rows to the base version and builds the
// version's table: _ord, _ploti_record_id, _ploti_place_id, the columns and
// _from (the base id a row continues). A matched row keeps its id; a new one
// gets "rec_<tag>_<counter + _ord>", so ids are unique within the dataset and
// never reused (the counter moves past every _ord a version used).
func (e *Emulator) assignIDs(ctx context.Context, p *buildPlan, v *version) error {
	from, err := e.matchFrom(ctx, p, v)
	if err != nil {
		return err
	}
	place := "NULL::VARCHAR"
	if p.place != "" {
		place = lit(p.place)
	}
	cols := make([]string, len(p.cols))
	for i, c := range p.cols {
		cols[i] = "s." + ident(c.Name)
	}
	keep := "o._rid"
	switch {
	case p.cfg.replace > 0:
		keep = fmt.Sprintf("CASE WHEN s._ord <= ceil(%g * %d) THEN NULL ELSE o._rid END", p.cfg.replace, v.rowCount)
	case len(p.cfg.rename) > 0:
		keep = fmt.Sprintf("CASE WHEN o._rid IN (%s) THEN NULL ELSE o._rid END", litList(p.cfg.rename))
	}
	q := fmt.Sprintf(`CREATE OR REPLACE TABLE %s AS
SELECT s._ord, coalesce(%s, %s || (%d + s._ord)) AS _ploti_record_id, %s AS _ploti_place_id, %s, o._rid AS _from FROM %s`,
		v.table, keep, lit("rec_"+p.d.tag+"_"), p.counter, place, strings.Join(cols, ", "), from)
	if _, err := e.db.ExecContext(ctx, q); err != nil {
		return fmt.Errorf("assign record ids: %w", err)
	}
	matched, err := queryInt(ctx, e.db, "SELECT count(_from) FROM "+v.table)
	if err != nil {
		return fmt.Errorf("count matched records: %w", err)
	}
	v.matched = matched
	if err := e.checkRenames(ctx, p, v); err != nil {
		return err
	}
	if p.cfg.replacing() && p.base != nil {
		f, err := e.copyTo(ctx, fmt.Sprintf(`SELECT _from AS from_id, _ploti_record_id AS to_id FROM %s
WHERE _from IS NOT NULL ORDER BY from_id`, v.table), p.rel+"/id-map.parquet")
		if err != nil {
			return err
		}
		v.idMap = &f
	}
	return nil
}

// matchFrom is the relation that pairs each staged row (stg as s) with
// the base version's record it continues (o._rid, NULL for none): a plain
// hash join on a key both sides hold unique and without nulls, else the
// n-th new row of a key with the n-th old one.
func (e *Emulator) matchFrom(ctx context.Context, p *buildPlan, v *version) (string, error) {
	stg, ids := p.table("stg"), p.table("ids")
	newE, oldE, uniq := matchExprs(p, v)
	var from string // stg as s, LEFT JOIN a relation o with the matched id o._rid
	switch {
	case len(newE) == 0:
		from = stg + " s LEFT JOIN (SELECT NULL::VARCHAR AS _rid) o ON false"
	case uniq:
		// both sides unique on a key without nulls: one plain hash join
		var om, on []string
		for i := range newE {
			om = append(om, fmt.Sprintf("%s AS _m%d", oldE[i], i))
			on = append(on, fmt.Sprintf("%s = o._m%d", newE[i], i))
		}
		from = fmt.Sprintf("%s s LEFT JOIN (SELECT b._ploti_record_id AS _rid, %s FROM %s b) o ON %s",
			stg, strings.Join(om, ", "), p.mRel, strings.Join(on, " AND "))
	default:
		// duplicates possible: pair the n-th new row of a key with the n-th old one
		var nm, om, on, part []string
		for i := range newE {
			m := fmt.Sprintf("_m%d", i)
			nm = append(nm, newE[i]+" AS "+m)
			om = append(om, oldE[i]+" AS "+m)
			on = append(on, fmt.Sprintf("n.%s IS NOT DISTINCT FROM o.%s", m, m))
			part = append(part, m)
		}
		q := fmt.Sprintf(`CREATE OR REPLACE TABLE %[1]s AS
WITH n AS (SELECT *, row_number() OVER (PARTITION BY %[2]s ORDER BY _ord) AS _dup FROM (SELECT s._ord, %[3]s FROM %[4]s s)),
o AS (SELECT *, row_number() OVER (PARTITION BY %[2]s ORDER BY _rid) AS _dup FROM (SELECT b._ploti_record_id AS _rid, %[5]s FROM %[6]s b))
SELECT n._ord, o._rid FROM n JOIN o ON %[7]s AND n._dup = o._dup`,
			ids, strings.Join(part, ", "), strings.Join(nm, ", "), stg, strings.Join(om, ", "), p.mRel, strings.Join(on, " AND "))
		if _, err := e.db.ExecContext(ctx, q); err != nil {
			return "", fmt.Errorf("match records: %w", err)
		}
		from = fmt.Sprintf("%s s LEFT JOIN %s o ON s._ord = o._ord", stg, ids)
	}
	return from, nil
}

// computeChanges compares the version with the base over the columns both
// have (same name and type), into the version's changes table.
func (e *Emulator) computeChanges(ctx context.Context, p *buildPlan, v *version) error {
	ch := p.table("ch")
	var diffs, newCols []string
	diffs = append(diffs, "n._ploti_place_id IS DISTINCT FROM b._ploti_place_id")
	for _, c := range p.cols {
		newCols = append(newCols, "n."+ident(c.Name)+" AS "+ident(c.Name))
		if oc, ok := findColumn(p.base.schema.Columns, c.Name); ok && sameType(c, oc) {
			diffs = append(diffs, fmt.Sprintf("%s IS DISTINCT FROM %s", cmpExpr(c, "n"), cmpExpr(oc, "b")))
		}
	}
	// One full join on the record id: a row only in the new version was
	// added, one only in the base removed (only its id kept), one in both
	// whose shared columns differ changed.
	q := fmt.Sprintf(`CREATE OR REPLACE TABLE %[1]s AS
SELECT coalesce(n._ploti_record_id, b._ploti_record_id) AS _ploti_record_id, n._ploti_place_id, %[2]s,
	CASE WHEN b._ploti_record_id IS NULL THEN 'added' WHEN n._ploti_record_id IS NULL THEN 'removed' ELSE 'changed' END AS _ploti_change
FROM %[3]s n FULL JOIN %[4]s b ON n._ploti_record_id = b._ploti_record_id
WHERE b._ploti_record_id IS NULL OR n._ploti_record_id IS NULL OR %[5]s
ORDER BY n._ord NULLS LAST, b._ploti_record_id`,
		ch, strings.Join(newCols, ", "), v.table, p.baseRel, strings.Join(diffs, " OR "))
	if _, err := e.db.ExecContext(ctx, q); err != nil {
		return fmt.Errorf("compute changes: %w", err)
	}
	rows, err := e.db.QueryContext(ctx, "SELECT _ploti_change, count(*) FROM "+ch+" GROUP BY 1")
	if err != nil {
		return fmt.Errorf("count changes: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var kind string
		var n int64
		if err := rows.Scan(&kind, &n); err != nil {
			return fmt.Errorf("count changes: %w", err)
		}
		switch kind {
		case "added":
			v.added = n
		case "changed":
			v.changed = n
		case "removed":
			v.removed = n
		}
	}
	v.hasChanges = true
	return rows.Err()
}

// copyTo writes a query's rows to a Parquet file and describes it.
func (e *Emulator) copyTo(ctx context.Context, query, rel string) (fileRef, error) {
	path := e.abs(rel)
	opts := "FORMAT parquet"
	if e.opts.RowGroupRows > 0 {
		opts += fmt.Sprintf(", ROW_GROUP_SIZE %d", e.opts.RowGroupRows)
	}
	if _, err := e.db.ExecContext(ctx, fmt.Sprintf("COPY (%s) TO %s (%s)", query, lit(path), opts)); err != nil {
		return fileRef{}, fmt.Errorf("write %s: %w", filepath.Base(rel), err)
	}
	return describeFile(rel, path)
}

func (e *Emulator) writeFiles(ctx context.Context, p *buildPlan, v *version) error {
	total := max(v.rowCount, 1)
	for i := range p.parts {
		q := fmt.Sprintf("SELECT * EXCLUDE (_ord, _from) FROM %s WHERE (_ord - 1) * %d // %d = %d ORDER BY _ord", v.table, p.parts, total, i)
		f, err := e.copyTo(ctx, q, fmt.Sprintf("%s/snapshot-part-%d.parquet", p.rel, i))
		if err != nil {
			return err
		}
		v.snapshot = append(v.snapshot, f)
	}
	if v.hasChanges {
		ch := p.table("ch")
		f, err := e.copyTo(ctx, "SELECT * FROM "+ch, p.rel+"/changes.parquet")
		e.dropTables(ch)
		if err != nil {
			return err
		}
		v.changes = &f
	}
	f, err := writeJSONFile(e.abs(p.rel+"/schema.json"), p.rel+"/schema.json", p.schema.json(p.d.spec.ID))
	if err != nil {
		return err
	}
	v.schemaFile = f
	return nil
}
