package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ploti-replica/ploti-replica/replica"
)

type statusCmd struct {
	env    *Env
	conn   connFlags
	JSON   bool
	Behind bool
}

func newStatusCmd(env *Env) *cobra.Command {
	s := &statusCmd{env: env}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show each dataset's table, version, rows, status and reason, the holds and the cursor",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return s.run(cmd.Context()) },
	}
	s.conn.register(cmd, flagsRead|flagsAPI)
	cmd.Flags().BoolVar(&s.JSON, "json", false, "print JSON")
	cmd.Flags().BoolVar(&s.Behind, "behind", false, "ask the API how many events wait after the cursor")
	return cmd
}

func (s *statusCmd) run(ctx context.Context) error {
	var st *replica.Status
	var behindErr error // the file's status is printed all the same
	if s.Behind {
		s.conn.resolve(s.env)
		s.conn.Watch = true // a file of watches only has no cursor to count from
		opts, err := s.conn.options(s.env)
		if err != nil {
			return err
		}
		opts.NoCreate = true
		r, err := replica.Open(ctx, s.conn.DB, opts)
		if err != nil {
			return err
		}
		defer r.Close()
		if st, err = r.Status(ctx); err != nil {
			return err
		}
		behind, err := r.Behind(ctx, 100000)
		switch {
		case err != nil:
			behindErr = explainUnreachable(err, "status --behind: count the events waiting")
		case behind >= 0:
			st.Behind = &behind
		}
	} else {
		// The file alone: the API's URL and subscription are not asked
		// for, so the file is not opened to find them.
		s.conn.resolveDB(s.env)
		var err error
		if st, err = s.read(ctx); err != nil {
			return err
		}
	}
	if s.JSON {
		if err := writeJSON(s.env.Stdout, st); err != nil {
			return err
		}
		return behindErr
	}
	printStatus(s.env.Stdout, replica.Name(s.conn.DB), st)
	return behindErr
}

// read is the file's status: the one its last writer kept beside it while
// the file is still in that state (replica.StoredStatus), else read from
// the file, opened read-only.
func (s *statusCmd) read(ctx context.Context) (*replica.Status, error) {
	ro, err := s.conn.readerOptions(s.env) // a usage error either way
	if err != nil {
		return nil, err
	}
	if !replica.IsDatabase(s.conn.DB) {
		if st, ok := replica.StoredStatus(s.conn.DB); ok {
			return st, nil
		}
	}
	rd, err := replica.OpenReader(ctx, s.conn.DB, ro)
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	return rd.Status(ctx)
}

func printStatus(w io.Writer, path string, st *replica.Status) {
	if st.Geometry == replica.GeometryPostGIS {
		fmt.Fprintf(w, "database:      %s\n", replica.Name(path))
	} else {
		fmt.Fprintf(w, "file:          %s\n", path)
	}
	fmt.Fprintf(w, "subscription:  %s at %s\n", orDash(st.SubscriptionID), orDash(st.APIURL))
	fmt.Fprintf(w, "cursor:        %s\n", orDash(st.Cursor))
	last := "never"
	if st.LastSyncAt != nil {
		last = textTime(*st.LastSyncAt) + " (" + time.Since(*st.LastSyncAt).Round(time.Second).String() + " ago)"
	}
	fmt.Fprintf(w, "last sync:     %s\n", last)
	if st.LastRun != nil && st.LastRun.Result != "ok" {
		fmt.Fprintf(w, "last run:      %s: %s\n", st.LastRun.Result, st.LastRun.Error)
	}
	if st.Behind != nil {
		fmt.Fprintf(w, "behind:        %d event(s) after the cursor\n", *st.Behind)
	}
	if st.Geometry == replica.GeometryPostGIS {
		fmt.Fprintf(w, "storage:       PostgreSQL; readers on any machine (psql, QGIS, BI servers) never wait for the writer\n")
	} else {
		fmt.Fprintf(w, "storage:       DuckDB storage version %d, readable by %s%s\n", st.StorageVersion, st.Readers, storageName(st.StorageVersion))
	}
	fmt.Fprintf(w, "geometry:      %s\n", geometryWords(st.Geometry))
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "DATASET\tSOURCE\tTABLE\tVERSION\tSCHEMA\tROWS\tSTATUS\tREASON")
	for _, d := range st.Datasets {
		v := "-"
		if d.Version > 0 {
			v = fmt.Sprint(d.Version)
		}
		why := d.Detail
		if why == "" {
			why = d.Reason
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", d.DatasetID, orDash(d.Source), d.Table, v, orDash(d.SchemaVersion), d.Rows, d.Status, orDash(why))
	}
	tw.Flush()
	var holds []replica.Hold
	for _, d := range st.Datasets {
		holds = append(holds, d.Holds...)
	}
	if len(holds) > 0 {
		fmt.Fprintln(w, "\nholds:")
		printHolds(w, holds)
	}
	var atts []string
	for _, d := range st.Datasets {
		if d.AttachmentsError != "" {
			atts = append(atts, d.DatasetID+": "+d.AttachmentsError)
		}
	}
	if len(atts) > 0 {
		fmt.Fprintf(w, "\nattachments not all kept (tables not affected; the next sync tries again):\n  %s\n", strings.Join(atts, "\n  "))
	}
}

// geometryWords says how the file stores geometry and who reads it.
func geometryWords(g string) string {
	if g == replica.GeometryPostGIS {
		return "PostGIS geometry in SRID 4326 with a GiST index: QGIS, GDAL and every PostGIS client read it"
	}
	if g == replica.GeometryWKB {
		return "wkb: standard WKB in BLOB columns, read by every DuckDB client (ST_GeomFromWKB in DuckDB 1.5, shapely, GeoPandas); CRS in each column's comment"
	}
	return "geometry: DuckDB GEOMETRY, read as geometry by DuckDB 1.5 only (1.1–1.4 without the spatial extension see an internal encoding; sync --geometry wkb stores standard WKB)"
}

// printHolds writes holds as a table: whose (kind), why, what stays
// held, since when, and the hold's detail as key=value pairs.
func printHolds(w io.Writer, hs []replica.Hold) error {
	tw := table(w)
	fmt.Fprintln(tw, "DATASET\tKIND\tREASON\tHELD\tSINCE\tDETAIL")
	for _, h := range hs {
		since := "-"
		if h.Since != nil {
			since = textTime(*h.Since)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", h.DatasetID, h.Kind, h.Reason, holdWords(h), since, orDash(keyValues(h.Detail)))
	}
	return tw.Flush()
}

// holdWords says what a hold keeps.
func holdWords(h replica.Hold) string {
	switch {
	case h.Version > 0 && h.Kind == replica.HoldServer:
		// feed-events.txt: "version is the version you hold, which stays
		// current meanwhile": Ploti holds the next one.
		return fmt.Sprintf("version %d stays current, Ploti holds the next", h.Version)
	case h.Version > 0:
		return fmt.Sprintf("at version %d", h.Version)
	case h.Kind == replica.HoldServer:
		return "no version yet, Ploti holds the first"
	}
	return "-"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// storageName is " (storage v1.0.0)" for a storage version DuckDB names,
// as the README and DuckDB's docs do; "" otherwise.
func storageName(v uint64) string {
	if n := replica.StorageName(v); n != "" {
		return " (storage " + n + ")"
	}
	return ""
}
