package fetch_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/fetch"
	"github.com/ploti-replica/ploti-replica/ploti"
)

// streamFixture is an emulator serving one version whose snapshot has
// several row groups, a client on it, and the snapshot's link and bytes
// (downloaded whole).
func streamFixture(t *testing.T) (*emulator.Emulator, *fetch.Client, ploti.File, []byte) {
	em, c, f, whole, _ := streamFixtureIn(t)
	return em, c, f, whole
}

// streamFixtureIn is streamFixture, with the client's spool dir.
func streamFixtureIn(t *testing.T) (*emulator.Emulator, *fetch.Client, ploti.File, []byte, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("emulator builds versions in DuckDB")
	}
	ctx := context.Background()
	em, err := emulator.New(emulator.Options{Dir: t.TempDir(), NoRateLimit: true, RowGroupRows: 100, DuckDBThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := em.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { em.Close() })
	em.AddPlace(emulator.Place{ID: "fl-orange", Name: "Orange County, FL", Kind: "county", State: "fl"})
	if err := em.AddDataset(emulator.DatasetSpec{ID: "ds_big", Title: "Big", PlaceID: "fl-orange", KeyColumns: []string{"k"},
		Columns: []emulator.Column{{Name: "k", Type: "string"}, {Name: "v", Type: "integer"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := em.CreateSubscription(emulator.SubscriptionSpec{Places: []string{"fl-orange"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := em.PublishQuery(ctx, "ds_big", "SELECT 'k' || i AS k, i AS v FROM range(3000) t(i)"); err != nil {
		t.Fatal(err)
	}
	spool := t.TempDir()
	c, err := fetch.New(fetch.Options{BaseURL: em.URL(), APIKey: em.APIKey(), SpoolDir: spool, DisableRateLimit: true,
		Sleep: func(context.Context, time.Duration) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	v, err := c.Version(ctx, "ds_big", 1)
	if err != nil {
		t.Fatal(err)
	}
	f := v.Files.Snapshot[0]
	p, err := c.Download(ctx, f, "whole.parquet", nil)
	if err != nil {
		t.Fatal(err)
	}
	whole, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return em, c, f, whole, spool
}

// streamAll streams f and waits for its end; it returns the bytes on disk
// and Done's error.
func streamAll(t *testing.T, c *fetch.Client, f ploti.File, name string, refresh func(context.Context) (ploti.File, error)) ([]byte, error) {
	t.Helper()
	ctx := context.Background()
	s, err := c.Stream(ctx, f, name, refresh)
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	defer s.Close()
	if err := s.Arrived(ctx, s.Size()); err != nil {
		return nil, err
	}
	derr := s.Done(ctx)
	b, err := os.ReadFile(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	return b, derr
}

// A snapshot is loaded as it downloads when its link serves
// byte ranges: the footer first, then the body in order, the same bytes
// as a whole download, verified against the link's sha256.
func TestStream_servesTheFileFooterFirst(t *testing.T) {
	em, c, f, whole := streamFixture(t)
	// The body's request waits this long on the emulator's wire, so that
	// the stream is seen before it: on loopback the body of this small file
	// may otherwise be on disk before the check (the test failed on a busy
	// machine).
	em.SetWire(emulator.Wire{Latency: 300 * time.Millisecond})
	s, err := c.Stream(context.Background(), f, "streamed.parquet", nil)
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	if s.Have() >= s.Size() {
		t.Fatalf("the whole file (%d bytes) is on disk before its body came", s.Size())
	}
	s.Close()
	got, err := streamAll(t, c, f, "streamed-again.parquet", nil)
	if err != nil {
		t.Fatalf("Done: %v", err)
	}
	if !bytes.Equal(got, whole) {
		t.Fatalf("streamed %d bytes differ from the whole download's %d", len(got), len(whole))
	}
}

// Ploti's documentation does not say that signed links serve ranges
// ("You fetch files yourself with signed links"): a link that answers a
// Range request with the whole file is ErrNoRanges, and nothing is left
// in the spool.
func TestStream_noRangesIsRefusedAndLeavesNothing(t *testing.T) {
	em, c, f, _, spool := streamFixtureIn(t)
	em.SetRanges(false)
	s, err := c.Stream(context.Background(), f, "refused.parquet", nil)
	if !errors.Is(err, fetch.ErrNoRanges) || s != nil {
		t.Fatalf("Stream without ranges: %v, %v; want ErrNoRanges", s, err)
	}
	if _, err := os.Stat(filepath.Join(spool, "refused.parquet.part")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused stream left its file: %v", err)
	}
}

// A stream whose bytes do not match the link's sha256 ends in
// ErrChecksum, after its reader has seen every byte.
func TestStream_wrongSHA256(t *testing.T) {
	_, c, f, _ := streamFixture(t)
	f.SHA256 = strings.Repeat("0", 64)
	if _, err := streamAll(t, c, f, "wrong.parquet", nil); !errors.Is(err, fetch.ErrChecksum) {
		t.Fatalf("Done = %v, want ErrChecksum", err)
	}
}

// A body cut off halfway, or answered 500, is resumed with a Range
// request from the first byte missing: the file ends whole and verified.
func TestStream_cutMidStreamResumes(t *testing.T) {
	em, c, f, whole := streamFixture(t)
	for _, fault := range []emulator.Fault{
		{Match: "/files/**", Kind: emulator.FaultCutOff, Skip: 1},
		{Match: "/files/**", Kind: emulator.FaultStatus, Status: 500, Skip: 1},
		{Match: "/files/**", Kind: emulator.FaultReset, Skip: 1},
	} {
		em.Inject(fault)
		got, err := streamAll(t, c, f, "cut.parquet", nil)
		if err != nil {
			t.Fatalf("fault %v: Done: %v", fault.Kind, err)
		}
		if !bytes.Equal(got, whole) {
			t.Fatalf("fault %v: streamed bytes differ from the whole download", fault.Kind)
		}
	}
}

// "Links last one hour. Ask again for fresh ones at any time": a link that
// expires between the footer and the body is refreshed, and the body
// comes through the fresh one.
func TestStream_expiredLinkIsRefreshed(t *testing.T) {
	em, c, f, whole := streamFixture(t)
	em.Inject(emulator.Fault{Match: "/files/**", Kind: emulator.FaultStatus, Status: 403, Code: "link_expired", Skip: 1})
	refreshed := 0
	got, err := streamAll(t, c, f, "expired.parquet", func(context.Context) (ploti.File, error) {
		refreshed++
		return f, nil
	})
	if err != nil || refreshed != 1 {
		t.Fatalf("Done: %v after %d refreshes, want nil after 1", err, refreshed)
	}
	if !bytes.Equal(got, whole) {
		t.Fatal("streamed bytes differ from the whole download")
	}
}
