package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ploti-replica/ploti-replica/fetch"
	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/replica"
)

type datasetsShowCmd struct {
	apiCmd
	Versions int
}

func newDatasetsShowCmd(env *Env) *cobra.Command {
	d := &datasetsShowCmd{apiCmd: apiCmd{env: env}}
	cmd := &cobra.Command{
		Use:   "show DATASET",
		Short: "Show a dataset: its versions, schema, holds and attachments",
		Long: `Show one dataset as Ploti describes it, its latest versions (following
previousVersion back from the current one; Ploti signs versions only for
datasets one of your subscriptions delivers), the current schema, its
attachments, and, when the --db file exists, what that file holds of it:
version, status, holds (Ploti's delays and your review holds) and the
attachments it keeps.

A dataset Data Feeds does not deliver to your workspace, which you may
still watch (any plan), is described by Ploti's watch API instead: its
version there is Ploti's own number, not a Data Feeds version.

--json prints {"dataset", "versions", "versionsUnavailable", "schema",
"attachments", "watch", "local"}; see datasets list --help for the
dataset; "watch" ({"kind", "version", "promotedAt", "provenanceUrl"}) is
set only for a dataset described by the watch API.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, a []string) error { return d.run(c.Context(), a[0]) },
	}
	cmd.Flags().IntVar(&d.Versions, "versions", 5, "how many versions to show, newest first")
	cmd.Flags().StringVar(&d.conn.DB, "db", "", "a replica file whose holds and version of the dataset to show, if it exists (env PLOTI_DB; default ploti.duckdb)")
	d.register(cmd)
	return cmd
}

// datasetShow is datasets show --json.
type datasetShow struct {
	Dataset  datasetOut   `json:"dataset"`
	Versions []versionOut `json:"versions"`
	// VersionsUnavailable says why no versions are listed, when none are.
	VersionsUnavailable string          `json:"versionsUnavailable,omitempty"`
	Schema              *schemaOut      `json:"schema,omitempty"`
	Attachments         []attachmentOut `json:"attachments"`
	// Watch is what Ploti's watch API says of a dataset Data Feeds does
	// not deliver to the workspace (watching is open on any plan): its
	// version is Ploti's own number, not a Data Feeds version.
	Watch *watchInfoOut `json:"watch,omitempty"`
	// Local is what the --db file holds of the dataset, when it holds it.
	Local *replica.DatasetStatus `json:"local,omitempty"`
}

// watchInfoOut is GET /v1/datasets/{dataset} (docs/wire.md 9) in a show.
type watchInfoOut struct {
	Kind          string     `json:"kind,omitempty"`
	Version       *int       `json:"version,omitempty"`
	PromotedAt    *time.Time `json:"promotedAt,omitempty"`
	ProvenanceURL string     `json:"provenanceUrl,omitempty"`
}

type versionOut struct {
	Version         int       `json:"version"`
	PreviousVersion int       `json:"previousVersion,omitempty"`
	SchemaVersion   string    `json:"schemaVersion,omitempty"`
	PublishedAt     time.Time `json:"publishedAt"`
	RowCount        *int64    `json:"rowCount,omitempty"`
	ResyncReason    string    `json:"resyncReason,omitempty"`
}

type schemaOut struct {
	SchemaVersion string         `json:"schemaVersion"`
	KeyColumns    []string       `json:"keyColumns"`
	Columns       []ploti.Column `json:"columns"`
}

// attachmentOut is an attachment of the current version (never its
// signed link), or one the --db file keeps.
type attachmentOut struct {
	Version     int    `json:"version,omitempty"`
	Name        string `json:"name"`
	ContentType string `json:"contentType,omitempty"`
	Bytes       *int64 `json:"bytes,omitempty"`
	SHA256      string `json:"sha256,omitempty"`
	// Kept says where the --db file keeps it: "inline" or a path.
	Kept string `json:"kept,omitempty"`
}

func (d *datasetsShowCmd) run(ctx context.Context, id string) error {
	if d.Versions < 0 {
		return &usageError{fmt.Errorf("--versions %d: want 0 or more", d.Versions)}
	}
	c, err := d.client()
	if err != nil {
		return err
	}
	ds, err := c.Dataset(ctx, id)
	if errors.Is(err, fetch.ErrNotFound) {
		// Not a Data Feeds dataset of this workspace: one it may watch.
		if out, ok := d.watched(ctx, c, id); ok {
			return d.show(ctx, id, out)
		}
	}
	if err != nil {
		return explain(err, "dataset "+id)
	}
	out := datasetShow{Dataset: newDatasetOut(*ds), Versions: []versionOut{}, Attachments: []attachmentOut{}}
	if ds.Current == nil {
		out.VersionsUnavailable = "no released version yet (status " + ds.Status + ")"
	} else {
		if err := d.versions(ctx, c, ds, &out); err != nil {
			return err
		}
		sc, err := c.Schema(ctx, id, 0)
		if err != nil {
			return explain(err, "schema of "+id)
		}
		out.Schema = &schemaOut{SchemaVersion: sc.SchemaVersion, KeyColumns: nonNil(sc.KeyColumns), Columns: nonNil(sc.Columns)}
	}
	return d.show(ctx, id, out)
}

// show adds what the --db file holds of the dataset and prints it.
func (d *datasetsShowCmd) show(ctx context.Context, id string, out datasetShow) error {
	var kept []replica.Attachment
	out.Local, kept = d.local(ctx, id)
	out.Attachments = withKept(out.Attachments, kept)
	if d.JSON {
		return d.printJSON(out)
	}
	return d.print(out)
}

// watched describes a dataset through Ploti's watch API, which answers for
// any dataset the workspace's coverage and plan open (watch-and-
// webhooks.txt: watching "works on any plan"); false when it does not
// know the dataset either.
func (d *datasetsShowCmd) watched(ctx context.Context, c *fetch.Client, id string) (datasetShow, bool) {
	info, err := c.DatasetInfo(ctx, id)
	if err != nil {
		return datasetShow{}, false
	}
	ds := datasetOut{ID: info.ID, Title: info.Title, Place: newPlaceRef(info.Place), Topic: deref(info.Topic),
		Keyed: len(info.KeyColumns) > 0, KeyColumns: nonNil(info.KeyColumns)}
	out := datasetShow{Dataset: ds, Versions: []versionOut{}, Attachments: []attachmentOut{},
		VersionsUnavailable: "not a Data Feeds dataset of your workspace; watching it (`ploti-replica watch add " + id + "`) keeps its latest version in your file",
		Watch:               &watchInfoOut{Kind: info.Kind, Version: info.Version, PromotedAt: info.PromotedAt, ProvenanceURL: deref(info.ProvenanceURL)}}
	if info.Columns != nil {
		out.Schema = &schemaOut{KeyColumns: nonNil(info.KeyColumns), Columns: info.Columns}
	}
	return out, true
}

// versions follows previousVersion back from the current version, up to
// --versions of them. A version Ploti will not sign for this workspace
// (409, or 404) ends the walk with the reason.
func (d *datasetsShowCmd) versions(ctx context.Context, c *fetch.Client, ds *ploti.Dataset, out *datasetShow) error {
	next := ds.Current.Version
	for i := 0; i < d.Versions && next > 0; i++ {
		v, err := c.Version(ctx, ds.ID, next)
		if fetch.IsDatasetGone(err) {
			if i == 0 {
				out.VersionsUnavailable = "no subscription of your workspace delivers it, and Ploti signs versions only for those: subscribe to see them"
			}
			return nil
		}
		if err != nil {
			return explain(err, fmt.Sprintf("version %d of %s", next, ds.ID))
		}
		vo := versionOut{Version: v.Version, SchemaVersion: v.SchemaVersion, PublishedAt: v.PublishedAt, RowCount: v.RowCount, ResyncReason: deref(v.ResyncReason)}
		next = 0
		if v.PreviousVersion != nil {
			vo.PreviousVersion, next = *v.PreviousVersion, *v.PreviousVersion
		}
		out.Versions = append(out.Versions, vo)
		if i == 0 {
			for _, a := range v.Files.Attachments {
				out.Attachments = append(out.Attachments, attachmentOut{Version: v.Version, Name: a.Name, ContentType: a.ContentType, Bytes: a.Bytes, SHA256: a.SHA256})
			}
		}
	}
	return nil
}

// local reads what the --db file holds of the dataset, and the
// attachments it keeps: nothing when the file does not exist, cannot be
// read now (another process writes it), or does not hold the dataset.
func (d *datasetsShowCmd) local(ctx context.Context, id string) (*replica.DatasetStatus, []replica.Attachment) {
	if !replica.Exists(d.conn.DB) {
		return nil, nil
	}
	rd, err := replica.OpenReader(ctx, d.conn.DB, replica.ReaderOptions{LockTimeout: -1})
	if err != nil {
		fmt.Fprintf(d.env.Stderr, "note: %s not read: %s\n", replica.Name(d.conn.DB), oneLine(err))
		return nil, nil
	}
	defer rd.Close()
	st, err := rd.Status(ctx)
	if err == nil {
		var kept []replica.Attachment
		if kept, err = rd.Attachments(ctx, id, false); err == nil {
			for i := range st.Datasets {
				if st.Datasets[i].DatasetID == id {
					return &st.Datasets[i], kept
				}
			}
			return nil, kept
		}
	}
	fmt.Fprintf(d.env.Stderr, "note: %s not read: %s\n", replica.Name(d.conn.DB), oneLine(err))
	return nil, nil
}

// withKept marks the attachments the file keeps (same name and sha256)
// with where, and adds those it keeps that Ploti no longer lists.
func withKept(list []attachmentOut, kept []replica.Attachment) []attachmentOut {
	for _, k := range kept {
		where := "inline"
		if !k.Inline() {
			where = k.Path
		}
		found := false
		for i := range list {
			if list[i].Name == k.Name && (list[i].SHA256 == "" || strings.EqualFold(list[i].SHA256, k.SHA256)) {
				list[i].Kept, found = where, true
			}
		}
		if !found {
			b := k.Bytes
			list = append(list, attachmentOut{Version: k.Version, Name: k.Name, ContentType: k.ContentType, Bytes: &b, SHA256: k.SHA256, Kept: where})
		}
	}
	return list
}

func (d *datasetsShowCmd) print(out datasetShow) error {
	w := d.env.Stdout
	printHead(w, out)
	printVersions(w, out)
	if out.Schema != nil {
		if out.Schema.SchemaVersion != "" {
			fmt.Fprintf(w, "\nschema %s:\n", out.Schema.SchemaVersion)
		} else {
			fmt.Fprintln(w, "\ncolumns:")
		}
		tw := table(w)
		for _, col := range out.Schema.Columns {
			fmt.Fprintf(tw, "  %s\t%s\n", col.Name, typeText(col.Type))
		}
		tw.Flush()
	}
	fmt.Fprintln(w, "\nattachments:")
	if len(out.Attachments) == 0 {
		fmt.Fprintln(w, "  none")
	}
	for _, a := range out.Attachments {
		fmt.Fprintf(w, "  %s (%s%s%s)\n", a.Name, orDash(a.ContentType), bytesText(a.Bytes), keptText(a.Kept))
	}
	d.printLocal(out.Local)
	return nil
}

// printHead prints what Ploti says of the dataset itself.
func printHead(w io.Writer, out datasetShow) {
	ds := out.Dataset
	fmt.Fprintf(w, "%s  %s\n", ds.ID, ds.Title)
	if ds.Description != "" {
		fmt.Fprintf(w, "  %s\n", ds.Description)
	}
	place := "-"
	if ds.Place != nil {
		place = strings.TrimSpace(ds.Place.ID + " " + parens(ds.Place.Name))
	}
	status := ds.Status
	if status == "" && out.Watch != nil {
		status = "- (Data Feeds does not deliver it to your workspace; Ploti's watch API describes it)"
	}
	fmt.Fprintf(w, "place:    %s\ntopic:    %s\nstatus:   %s\nkey:      %s\n", place, orDash(ds.Topic), orDash(status), orDash(strings.Join(ds.KeyColumns, ", ")))
	if ds.Source != nil {
		fmt.Fprintf(w, "source:   %s\n", strings.TrimSpace(ds.Source.Publisher+" "+ds.Source.URL))
	}
	if r := ds.Refresh; r != nil {
		var parts []string
		if r.LastCheckedAt != nil {
			parts = append(parts, "last "+textTime(*r.LastCheckedAt))
		}
		if r.NextCheckBy != nil {
			parts = append(parts, "next by "+textTime(*r.NextCheckBy))
		}
		fmt.Fprintf(w, "checked:  %s\n", strings.Join(parts, ", "))
	}
	if wi := out.Watch; wi != nil {
		v := "none released yet"
		if wi.Version != nil {
			v = fmt.Sprintf("%d (Ploti's own number, not a Data Feeds version)", *wi.Version)
		}
		fmt.Fprintf(w, "watch:    version %s", v)
		if wi.PromotedAt != nil {
			fmt.Fprintf(w, ", promoted %s", textTime(*wi.PromotedAt))
		}
		fmt.Fprintln(w)
		if wi.ProvenanceURL != "" {
			fmt.Fprintf(w, "provenance: %s\n", wi.ProvenanceURL)
		}
	}
	if ds.MapURL != "" {
		fmt.Fprintf(w, "map:      %s\n", ds.MapURL)
	}
}

// printVersions prints the versions shown, or why none are.
func printVersions(w io.Writer, out datasetShow) {
	fmt.Fprintln(w, "\nversions:")
	if len(out.Versions) == 0 {
		fmt.Fprintf(w, "  none shown: %s\n", orDash(out.VersionsUnavailable))
	} else {
		tw := table(w)
		fmt.Fprintln(tw, "  VERSION\tPREVIOUS\tSCHEMA\tPUBLISHED\tROWS\tRESYNC")
		for _, v := range out.Versions {
			rows := "-"
			if v.RowCount != nil {
				rows = fmt.Sprint(*v.RowCount)
			}
			prev := "-"
			if v.PreviousVersion > 0 {
				prev = fmt.Sprint(v.PreviousVersion)
			}
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%s\n", v.Version, prev, orDash(v.SchemaVersion), textTime(v.PublishedAt), rows, orDash(v.ResyncReason))
		}
		tw.Flush()
	}
}

func (d *datasetsShowCmd) printLocal(l *replica.DatasetStatus) {
	w := d.env.Stdout
	if l == nil {
		return
	}
	version := fmt.Sprint(l.Version)
	if l.Source == replica.SourceWatch {
		version += " (a watch version: Ploti's own number, not a Data Feeds version)"
	}
	fmt.Fprintf(w, "\nin %s: table %s, version %s, %d rows, %s", replica.Name(d.conn.DB), l.Table, version, l.Rows, l.Status)
	if l.Reason != "" {
		fmt.Fprintf(w, " (%s)", l.Reason)
	}
	fmt.Fprintln(w)
	if len(l.Holds) == 0 {
		fmt.Fprintln(w, "  holds: none")
	}
	for _, h := range l.Holds {
		who := "Ploti holds its next version for review"
		if h.Kind == replica.HoldLocal {
			who = "you hold it for review (holds release " + l.DatasetID + ")"
		}
		fmt.Fprintf(w, "  hold: %s at version %d: %s\n", who, h.Version, h.Reason)
	}
}

func parens(s string) string {
	if s == "" {
		return ""
	}
	return "(" + s + ")"
}

func bytesText(b *int64) string {
	if b == nil {
		return ""
	}
	return fmt.Sprintf(", %d bytes", *b)
}

func keptText(k string) string {
	if k == "" {
		return ""
	}
	return ", kept " + k
}

// typeText writes a column type: "decimal(14,2)", "list<string>",
// "geometry(Point, EPSG:4326)".
func typeText(t ploti.Type) string {
	switch {
	case t.Items != nil:
		return t.Type + "<" + typeText(*t.Items) + ">"
	case t.Precision != nil:
		return fmt.Sprintf("%s(%d,%d)", t.Type, t.Precision.Precision, t.Precision.Scale)
	case t.Geometry != nil:
		return fmt.Sprintf("%s(%s)", t.Type, strings.Trim(strings.Join(t.Geometry.Types, ",")+", "+t.Geometry.CRS, ", "))
	}
	return t.Type
}
