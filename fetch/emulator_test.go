package fetch_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/fetch"
	"github.com/ploti-replica/ploti-replica/ploti"
)

// TestClient_Emulator runs the client against the project's emulator: a
// manifest, the event log, a version by number and by its event link, a
// snapshot download with sha256 verified, and a refresh after the link
// expired. The emulator counts any key sent to its file host.
func TestClient_Emulator(t *testing.T) {
	if testing.Short() {
		t.Skip("emulator builds versions in DuckDB")
	}
	ctx := context.Background()
	em, err := emulator.New(emulator.Options{Dir: t.TempDir(), NoRateLimit: true})
	if err != nil {
		t.Fatalf("emulator.New: %v", err)
	}
	if err := em.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { em.Close() })
	const ds = "ds_fl_orange_permits"
	em.AddPlace(emulator.Place{ID: "fl-orange", Name: "Orange County, FL", Kind: "county", State: "fl"})
	em.AddTopic("development-activity", "Development activity")
	if err := em.AddDataset(emulator.DatasetSpec{ID: ds, Title: "Permits", PlaceID: "fl-orange",
		Topic: "development-activity", KeyColumns: []string{"permit_number"},
		Columns: []emulator.Column{{Name: "permit_number", Type: "string"}, {Name: "units", Type: "integer"}}}); err != nil {
		t.Fatalf("AddDataset: %v", err)
	}
	sub, err := em.CreateSubscription(emulator.SubscriptionSpec{Places: []string{"fl-orange"}})
	if err != nil {
		t.Fatalf("CreateSubscription: %v", err)
	}
	for _, rows := range [][]emulator.Row{
		{{"permit_number": "P-1", "units": 1}, {"permit_number": "P-2", "units": 2}},
		{{"permit_number": "P-1", "units": 1}, {"permit_number": "P-2", "units": 3}, {"permit_number": "P-3", "units": 4}},
	} {
		if _, err := em.Publish(ctx, ds, rows); err != nil {
			t.Fatalf("Publish: %v", err)
		}
	}

	c, err := fetch.New(fetch.Options{BaseURL: em.URL(), APIKey: em.APIKey(), SpoolDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	wrong, err := fetch.New(fetch.Options{BaseURL: em.URL(), APIKey: "wrong"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wrong.Manifest(ctx, sub, ""); !errors.Is(err, fetch.ErrUnauthorized) {
		t.Fatalf("wrong key: err = %v, want ErrUnauthorized", err)
	}

	m, err := c.Manifest(ctx, sub, "")
	if err != nil {
		t.Fatalf("Manifest: %v", err)
	}
	if len(m.Datasets) != 1 || m.Datasets[0].DatasetID != ds || m.Datasets[0].Version != 2 || m.EventCursor == "" {
		t.Fatalf("manifest = %+v", m)
	}

	page, err := c.Events(ctx, sub, "", 500, nil)
	if err != nil {
		t.Fatalf("Events: %v", err)
	}
	var link string
	for _, e := range page.Events {
		if e.Type == ploti.EventUpdated && e.Data.Links != nil {
			link = e.Data.Links.Version
		}
	}
	if link == "" {
		t.Fatalf("no updated event with links.version in %+v", page.Events)
	}
	v, err := c.VersionByLink(ctx, link)
	if err != nil {
		t.Fatalf("VersionByLink: %v", err)
	}
	if v.Version != 2 || v.PreviousVersion == nil || *v.PreviousVersion != 1 || len(v.Files.Snapshot) == 0 {
		t.Fatalf("version = %+v", v)
	}
	if _, err := c.Version(ctx, ds, 1); err != nil {
		t.Fatalf("Version 1: %v", err)
	}
	if _, err := c.Version(ctx, ds, 99); !errors.Is(err, fetch.ErrNotFound) {
		t.Fatalf("Version 99: err = %v, want ErrNotFound", err)
	}
	if s, err := c.Schema(ctx, ds, 0); err != nil || len(s.Columns) != 2 {
		t.Fatalf("Schema = %+v, %v", s, err)
	}

	if s, err := c.Schemas(ctx, ds); err != nil || len(s) != 1 || s[0].SchemaVersion == "" {
		t.Fatalf("Schemas = %+v, %v", s, err)
	}
	if d, err := c.Dataset(ctx, ds); err != nil || d.Current == nil || d.Current.Version != 2 {
		t.Fatalf("Dataset = %+v, %v", d, err)
	}

	snap := m.Datasets[0].Files.Snapshot[0]
	if snap.SHA256 == "" {
		t.Fatalf("emulator link has no sha256: %+v", snap)
	}
	p, err := c.Download(ctx, snap, ds+"-v2-snapshot-0.parquet", nil)
	if err != nil {
		t.Fatalf("Download: %v", err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(b); !strings.EqualFold(hex.EncodeToString(sum[:]), snap.SHA256) {
		t.Fatalf("downloaded file's sha256 differs from the link's")
	}

	// Two hours on, the manifest's links have expired: Download asks for
	// fresh ones through the links endpoint.
	em.Advance(2 * time.Hour)
	var refreshes int
	refresh := func(ctx context.Context) (ploti.File, error) {
		refreshes++
		v, err := c.Links(ctx, ds, 2, []string{"snapshot"})
		if err != nil {
			return ploti.File{}, err
		}
		return v.Files.Snapshot[0], nil
	}
	if _, err := c.Download(ctx, snap, ds+"-v2-snapshot-0.parquet", refresh); err != nil {
		t.Fatalf("Download after expiry: %v", err)
	}
	if refreshes != 1 {
		t.Fatalf("refreshes = %d, want 1", refreshes)
	}
	if n := em.KeyLeaks(); n != 0 {
		t.Fatalf("the file host saw the API key %d times", n)
	}
}
