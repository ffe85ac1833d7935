package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/fetch"
	"github.com/ploti-replica/ploti-replica/replica"
)

type demoCmd struct {
	env      *Env
	DB       string
	Force    bool
	Geometry string
}

func newDemoCmd(env *Env) *cobra.Command {
	d := &demoCmd{env: env}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the whole story against the bundled emulator: no Ploti account needed",
		Long: `Start the emulator in-process with a small workspace (permits with points
and a data dictionary, parcels with polygons, inspections with decimals,
dates, timestamps, booleans and lists, over two counties) and walk a new
user's path: find the places, preview what a subscription would deliver,
create it, watch a statewide dataset the subscription does not deliver, sync
both into a DuckDB file, publish two more versions with added, changed and
removed rows, sync again, and show how to query the file.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return d.run(cmd.Context()) },
	}
	cmd.Flags().StringVar(&d.DB, "db", "ploti-demo.duckdb", "the DuckDB file to write (an earlier demo file is replaced; any other file only with --force), or a postgres:// URL of a PostgreSQL database with PostGIS (empty, or an earlier demo's)")
	cmd.Flags().BoolVar(&d.Force, "force", false, "replace --db even when it is not an earlier demo file")
	cmd.Flags().StringVar(&d.Geometry, "geometry", replica.GeometryWKB, "how the file stores geometry: wkb (standard WKB, which every DuckDB client reads) or geometry (DuckDB 1.5's GEOMETRY)")
	return cmd
}

func (d *demoCmd) run(ctx context.Context) error {
	w := d.env.Stdout
	start := time.Now()
	if d.Geometry == "" {
		d.Geometry = replica.GeometryWKB
	}
	if err := replica.CheckGeometry(d.Geometry); err != nil {
		return &usageError{fmt.Errorf("--%w", err)}
	}
	db := replica.IsDatabase(d.DB)
	if err := d.checkTarget(ctx, db); err != nil {
		return err
	}
	em, err := emulator.New(emulator.Options{NoRateLimit: true})
	if err != nil {
		return err
	}
	defer em.Close()
	world, err := d.startWorld(em, db)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "emulator on %s: a workspace covering two Florida counties, no subscription yet\n", em.URL())
	if world.SubscriptionID, err = d.subscribe(ctx, em); err != nil {
		return err
	}
	if err := d.step(ctx, em, "watch a statewide dataset the subscription does not deliver (watching is open on any plan):",
		"watch", "add", emulator.DemoWatched); err != nil {
		return err
	}
	if err := markDemoFile(ctx, d.DB); err != nil {
		return err
	}
	if err := d.rounds(ctx, em, world, db, start); err != nil {
		return err
	}
	if err := d.show(ctx, w); err != nil {
		return err
	}
	if err := d.step(ctx, em, "your watches beside what the file holds of them:", "watch", "list", "--db", d.DB); err != nil {
		return err
	}
	if err := d.step(ctx, em, "what the file holds of the permits, and their data dictionary:", "datasets", "show", emulator.DemoPermits, "--versions", "3", "--db", d.DB); err != nil {
		return err
	}
	if db {
		d.hintDatabase(w, replica.Name(d.DB))
		return nil
	}
	if err := d.history(ctx, em); err != nil {
		return err
	}
	d.hintQueries(w)
	return nil
}

// checkTarget refuses a file or database the demo must not overwrite.
func (d *demoCmd) checkTarget(ctx context.Context, db bool) error {
	if db {
		return checkDemoDatabase(ctx, d.DB)
	}
	if err := replica.CheckFolder(d.DB); err != nil {
		return err
	}
	if d.Force {
		return nil
	}
	return checkDemoFile(ctx, d.DB)
}

// startWorld starts the emulator with the demo's catalog and watched
// dataset, and removes a file an earlier demo left (with its log,
// attachments and status).
func (d *demoCmd) startWorld(em *emulator.Emulator, db bool) (*emulator.Demo, error) {
	if err := em.Start(); err != nil {
		return nil, err
	}
	world, err := emulator.SeedDemoCatalog(em)
	if err != nil {
		return nil, err
	}
	if err := world.AddWatched(); err != nil {
		return nil, err
	}
	if db {
		return world, nil
	}
	if err := replica.Remove(context.Background(), d.DB); err != nil {
		return nil, fmt.Errorf("demo: remove the earlier demo's files (%s): %w", strings.Join(replica.FilesOf(d.DB), ", "), err)
	}
	return world, nil
}

// rounds publishes three versions of each dataset, syncing after each.
func (d *demoCmd) rounds(ctx context.Context, em *emulator.Emulator, world *emulator.Demo, db bool, start time.Time) error {
	w := d.env.Stdout
	// The demo keeps history for its datasets: it ends with a
	// record's story and what changed between the first and last version.
	opts := replica.Options{APIURL: em.URL(), APIKey: em.APIKey(), SubscriptionID: world.SubscriptionID, Watch: true, Geometry: d.Geometry,
		History: []string{replica.HistoryAll}}
	name, syncFlags := replica.Name(d.DB), "--history all --db "+d.DB+" --geometry "+d.Geometry
	if db {
		// History is a DuckDB file's for now (docs/decisions.md 48); a
		// database stores PostGIS geometry.
		opts.History, syncFlags = nil, "--db "+name
	}
	for round := 0; round < 3; round++ {
		if err := world.Next(ctx); err != nil { // the watched dataset too
			return err
		}
		if round == 0 {
			fmt.Fprintf(w, "\nPloti builds the first version of each dataset; sync it into %s%s:\n$ ploti-replica sync %s\n", name,
				map[bool]string{false: ", keeping every version of every record"}[db], syncFlags)
		} else {
			fmt.Fprintf(w, "published version %d of each dataset (rows added, changed and removed)\n", round+1)
		}
		res, err := syncOnce(ctx, d.DB, opts)
		if err != nil {
			return err
		}
		printSync(w, name, res)
		if round == 0 {
			fmt.Fprintf(w, "  first query answered %s after start\n", time.Since(start).Round(time.Millisecond))
		}
		fmt.Fprintln(w)
	}
	return nil
}

// hintQueries prints queries to try on the demo's file.
func (d *demoCmd) hintQueries(w io.Writer) {
	sel, why := demoGeometryQuery(d.Geometry)
	fmt.Fprintf(w, `
Query it (the file is closed now, so any client may open it):
  duckdb -readonly %[1]s "SELECT status, count(*), sum(valuation) FROM ds_fl_orange_permits GROUP BY 1"
  duckdb -readonly %[1]s "SELECT permit_number, %[2]s FROM ds_fl_orange_permits LIMIT 3"   # %[3]s
  python3 -c "import duckdb; print(duckdb.connect('%[1]s', read_only=True).sql('SELECT * FROM _ploti.datasets'))"
  duckdb -readonly %[1]s "SELECT dataset_id, name, bytes, decode(content) FROM _ploti.attachments"
  duckdb -readonly %[1]s "SELECT status, count(*) FROM ds_fl_contractor_licenses GROUP BY 1"   # the watched one
  duckdb -readonly %[1]s "SELECT * FROM history.ds_fl_orange_permits_as_of(1)"     # the permits as version 1 held them
  go run ./cmd/ploti-replica changes --mark me --db %[1]s                        # what changed since you last looked
  go run ./cmd/ploti-replica status --db %[1]s
`, d.DB, sel, why)
}

// demoGeometryQuery is the demo's hint for reading a geometry column: the
// select list, and a word on who runs it.
func demoGeometryQuery(geometry string) (sel, why string) {
	if geometry == replica.GeometryWKB {
		return "geometry", "standard WKB: every DuckDB client reads it; ST_GeomFromWKB(geometry) in DuckDB 1.5"
	}
	return "ST_AsText(geometry)", "DuckDB 1.5; for older clients: demo --geometry wkb"
}

// subscribe walks a new user's first steps with the CLI's own commands:
// the places, a preview, the subscription. It returns the subscription.
func (d *demoCmd) subscribe(ctx context.Context, em *emulator.Emulator) (string, error) {
	steps := []struct {
		say  string
		args []string
	}{
		{"find the places your coverage has, with how many datasets each holds:", []string{"places", "--state", "fl", "--deliverable"}},
		{"see what a subscription to every Florida county you cover would deliver:", []string{"subscriptions", "preview", "--place", "fl-counties", "--sort", "title"}},
		{"subscribe (the create is retried with one Idempotency-Key, so it never makes two):", []string{"subscriptions", "create", "--name", "Central Florida", "--place", "fl-counties"}},
	}
	for _, st := range steps {
		if err := d.step(ctx, em, st.say, st.args...); err != nil {
			return "", err
		}
	}
	c, err := fetch.New(fetch.Options{BaseURL: em.URL(), APIKey: em.APIKey()})
	if err != nil {
		return "", err
	}
	subs, err := c.Subscriptions(ctx)
	if err != nil || len(subs) != 1 {
		return "", fmt.Errorf("demo: the subscription just created is not listed (%d, %v)", len(subs), err)
	}
	return subs[0].ID, nil
}

// step prints a command line and runs it against the demo's emulator.
func (d *demoCmd) step(ctx context.Context, em *emulator.Emulator, say string, args ...string) error {
	w := d.env.Stdout
	shown := make([]string, len(args))
	for i, a := range args {
		shown[i] = replica.Name(a) // a database URL without its password
		if strings.ContainsAny(a, " '\"$") {
			shown[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	fmt.Fprintf(w, "\n%s\n$ ploti-replica %s\n", say, strings.Join(shown, " "))
	vars := map[string]string{"PLOTI_API_URL": em.URL(), "PLOTI_API_KEY": em.APIKey(), "PLOTI_DB": d.DB}
	env := &Env{Stdout: w, Stderr: d.env.Stderr, Getenv: func(k string) string { return vars[k] }}
	if code := run(ctx, env, args); code != exitOK {
		return fmt.Errorf("demo: ploti-replica %s: exit %d", strings.Join(args, " "), code)
	}
	return nil
}

// history shows the permits' history: the story of the record that
// changed most, and what changed between the first and the last version.
func (d *demoCmd) history(ctx context.Context, em *emulator.Emulator) error {
	rd, err := replica.OpenReader(ctx, d.DB, replica.ReaderOptions{})
	if err != nil {
		return err
	}
	var id string
	var last int
	err = rd.DB().QueryRowContext(ctx, `SELECT (SELECT _ploti_record_id FROM history.ds_fl_orange_permits
			GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1), (SELECT version FROM _ploti.datasets WHERE table_name = 'ds_fl_orange_permits')`).Scan(&id, &last)
	rd.Close()
	if err != nil {
		return fmt.Errorf("demo: pick a permit with a story: %w", err)
	}
	if err := d.step(ctx, em, "the story of the permit that changed most, version by version (history.ds_fl_orange_permits_story in SQL):",
		"history", emulator.DemoPermits, id); err != nil {
		return err
	}
	return d.step(ctx, em, "what changed in the permits from the first version to the last (history.ds_fl_orange_permits_as_of(V) in SQL):",
		"diff", emulator.DemoPermits, "--from", "1", "--to", fmt.Sprint(last))
}

// show prints the synced datasets from the file itself.
func (d *demoCmd) show(ctx context.Context, w io.Writer) error {
	rd, err := replica.OpenReader(ctx, d.DB, replica.ReaderOptions{})
	if err != nil {
		return err
	}
	defer rd.Close()
	st, err := rd.Status(ctx)
	if err != nil {
		return err
	}
	printStatus(w, replica.Name(d.DB), st)
	var n int
	var total float64
	var wkt string
	geom := "geometry"
	if rd.Geometry() == replica.GeometryWKB {
		geom = "ST_GeomFromWKB(geometry)"
	}
	// min, not any_value: PostgreSQL 15 has no any_value.
	q := `SELECT count(*), CAST(sum(valuation) AS DOUBLE PRECISION), min(ST_AsText(` + geom + `)) FROM ds_fl_orange_permits WHERE status = 'issued'`
	if err := rd.DB().QueryRowContext(ctx, q).Scan(&n, &total, &wkt); err != nil {
		return fmt.Errorf("demo query: %w", err)
	}
	fmt.Fprintf(w, "\n%s\n  → %d issued permits worth $%.2f, e.g. at %s\n", q, n, total, wkt)
	return nil
}

// demoMark is the comment the demo puts on _ploti.subscription, so that a
// later demo knows the file is its own to replace.
const demoMark = "ploti-replica demo file"

// markDemoFile creates the demo's file and marks it as the demo's before
// anything else is written to it.
func markDemoFile(ctx context.Context, path string) error {
	return replica.SetLabel(ctx, path, demoMark)
}

// checkDemoFile refuses to replace a file that is not an earlier demo's
// (demo replaced a user's DuckDB file, or a text file, silently).
func checkDemoFile(ctx context.Context, path string) error {
	exists, err := replica.FileExists(path)
	if err == nil && !exists {
		return nil
	}
	refuse := func(why string) error {
		return &usageError{fmt.Errorf("demo: %s %s; pick another --db, or pass --force to replace it", path, why)}
	}
	if err != nil {
		return refuse("is not an earlier demo file (" + oneLine(err) + ")")
	}
	rd, err := replica.OpenReader(ctx, path, replica.ReaderOptions{LockTimeout: -1})
	if err != nil {
		if errors.Is(err, replica.ErrLocked) {
			return err
		}
		return refuse("is not an earlier demo file (" + oneLine(err) + ")")
	}
	defer rd.Close()
	mark, err := rd.Label(ctx)
	if err != nil || mark != demoMark {
		return refuse("is a replica that the demo did not write")
	}
	return nil
}

// hintDatabase ends a demo kept in a PostgreSQL database: how psql, QGIS
// and a second machine read it while a sync writes.
func (d *demoCmd) hintDatabase(w io.Writer, name string) {
	fmt.Fprintf(w, `
Query it from any machine that reaches the database (readers never wait for the writer):
  psql '%[1]s' -c "SELECT status, count(*), sum(valuation) FROM ds_fl_orange_permits GROUP BY 1"
  psql '%[1]s' -c "SELECT permit_number, ST_AsText(geometry) FROM ds_fl_orange_permits LIMIT 3"   # PostGIS geometry, SRID 4326
  psql '%[1]s' -c "SELECT dataset_id, version, status, row_count FROM _ploti.datasets"
  psql '%[1]s' -c "SELECT status, count(*) FROM ds_fl_contractor_licenses GROUP BY 1"   # the watched one
  QGIS: Layer > Add Layer > Add PostGIS Layers, a connection to the database, then ds_fl_orange_permits
  go run ./cmd/ploti-replica status --db '%[1]s'
`, name)
}

// checkDemoDatabase refuses a database that holds a replica the demo did
// not write, and clears an earlier demo's: its dataset tables and the
// _ploti schema. An empty database is the demo's to fill.
func checkDemoDatabase(ctx context.Context, url string) error {
	rd, err := replica.OpenReader(ctx, url, replica.ReaderOptions{LockTimeout: -1})
	if errors.Is(err, replica.ErrNotReplica) {
		return nil
	}
	if err != nil {
		return err
	}
	mark, err := rd.Label(ctx)
	rd.Close()
	if err != nil || mark != demoMark {
		return &usageError{fmt.Errorf("demo: %s holds a replica that the demo did not write; give it an empty database (createdb)", replica.Name(url))}
	}
	if err := replica.Remove(ctx, url); err != nil {
		return fmt.Errorf("demo: clear the earlier demo's replica in %s (its dataset tables and the _ploti schema): %w", replica.Name(url), err)
	}
	return nil
}
