package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/backends"
)

// noFiles fails when dir holds anything: a refused command leaves nothing.
func noFiles(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		t.Errorf("left behind: %s", e.Name())
	}
}

// A sync with no subscription and no watched dataset has nothing to keep:
// it says so, naming both ways to give it something, exits 2 and makes no
// file (it made an empty one and said "caught up"). A file left empty by
// such a sync is refused too, and left as it is; one watch is enough.
func TestSync_nothingToKeepIsAUsageErrorAndMakesNoFile(t *testing.T) {
	em, _, vars := demoWorld(t)
	delete(vars, "PLOTI_SUBSCRIPTION")
	dir := filepath.Dir(vars["PLOTI_DB"])
	for _, args := range [][]string{{"sync"}, {"sync", "--watches=false"}, {"sync", "--json"}} {
		code, out, errs := cli(t, vars, args...)
		if code != exitUsage || !strings.Contains(errs, "--subscription") || !strings.Contains(errs, "watch add") || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %d naming --subscription and `watch add`", args, code, out, errs, exitUsage)
		}
		noFiles(t, dir)
	}

	// A file with no subscription and no dataset (such a sync made them).
	db, err := backends.Open(context.Background(), vars["PLOTI_DB"], storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	before, _ := os.ReadDir(dir)
	code, _, errs := cli(t, vars, "sync")
	if code != exitUsage || !strings.Contains(errs, "--subscription") || !strings.Contains(errs, "holds no dataset") {
		t.Fatalf("sync of an empty file without a subscription: exit %d, %q", code, errs)
	}
	if after, _ := os.ReadDir(dir); len(after) != len(before) {
		t.Fatalf("the refused sync changed the folder: %v → %v", before, after)
	}

	if _, err := em.Watch(emulator.DemoPermits); err != nil {
		t.Fatal(err)
	}
	if out := mustCLI(t, vars, "sync"); !strings.Contains(out, "1 dataset(s) watched") {
		t.Fatalf("a watch-only sync:\n%s", out)
	}
}

// An id given to narrow a list that the API does not know is named, and
// the command fails, as subscriptions preview does for an unknown place;
// a known filter that matches nothing stays a plain empty list.
func TestDiscovery_unknownFiltersAreNamed(t *testing.T) {
	_, _, vars := demoWorld(t)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"datasets", "list", "--place", "fl-nowhere"}, exitFailure, "--place fl-nowhere: no such place"},
		{[]string{"datasets", "list", "--place", "fl-nowhere", "--json"}, exitFailure, "fl-nowhere"},
		{[]string{"datasets", "list", "--topic", "nope"}, exitFailure, "--topic nope: no such topic"},
		{[]string{"datasets", "list", "--subscription", "sub_999"}, exitFailure, "--subscription sub_999: Ploti knows no such subscription"},
		{[]string{"places", "--kind", "planet"}, exitUsage, `--kind "planet": no such kind of place: want one of county, state, counties, us`},
		{[]string{"places", "--state", "zz"}, exitFailure, "--state zz"},
		{[]string{"webhooks", "list", "--subscription", "sub_999"}, exitFailure, "--subscription sub_999: Ploti knows no such subscription"},
	} {
		code, out, errs := cli(t, vars, tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.want) || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %d saying %q", tc.args, code, out, errs, tc.code, tc.want)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"datasets", "list", "--place", "us"}, "no datasets match"},
		{[]string{"datasets", "list", "--place", "us", "--json"}, "[]"},
		{[]string{"places", "--state", "fl", "--kind", "us"}, "no places match"},
		{[]string{"webhooks", "list", "--subscription", vars["PLOTI_SUBSCRIPTION"]}, "no webhooks"},
	} {
		if out := mustCLI(t, vars, tc.args...); !strings.Contains(out, tc.want) {
			t.Errorf("%v: %q, want %q", tc.args, out, tc.want)
		}
	}
}

// --history and --id-ref name datasets: one Ploti does not know is
// refused before the sync, naming it, and no file is made; one Ploti knows
// passes, held by the file or not yet.
func TestSync_unknownDatasetIDsAreNamed(t *testing.T) {
	_, _, vars := demoWorld(t)
	dir := filepath.Dir(vars["PLOTI_DB"])
	for _, args := range [][]string{{"sync", "--history", "ds_nope"}, {"sync", "--id-ref", "mytable.col=ds_nope"},
		{"sync", "--history", emulator.DemoPermits, "--history", "ds_nope"}} {
		code, _, errs := cli(t, vars, args...)
		if code != exitUsage || !strings.Contains(errs, "Ploti knows no dataset ds_nope") {
			t.Errorf("%v: exit %d, %q; want %d naming ds_nope", args, code, errs, exitUsage)
		}
		noFiles(t, dir)
	}
	mustCLI(t, vars, "sync", "--history", emulator.DemoPermits)
	mustCLI(t, vars, "sync", "--history", emulator.DemoPermits, "--history", "all")
	if code, _, errs := cli(t, vars, "sync", "--history", "ds_nope"); code != exitUsage || !strings.Contains(errs, "ds_nope") {
		t.Fatalf("an existing file: exit %d, %q", code, errs)
	}
}

// A wrong key on sync is said as places says it, new file or not.
func TestSync_wrongKeyInTheWordsOfPlaces(t *testing.T) {
	_, _, vars := demoWorld(t)
	mustCLI(t, vars, "sync")
	bad := map[string]string{}
	for k, v := range vars {
		bad[k] = v
	}
	bad["PLOTI_API_KEY"] = "wrong"
	const want = "Ploti refused the API key (401): check PLOTI_API_KEY"
	if _, _, errs := cli(t, bad, "places"); !strings.Contains(errs, want) {
		t.Fatalf("places says %q", errs)
	}
	for _, db := range []string{vars["PLOTI_DB"], filepath.Join(t.TempDir(), "new.duckdb")} {
		bad["PLOTI_DB"] = db
		for _, sub := range []string{vars["PLOTI_SUBSCRIPTION"], ""} {
			bad["PLOTI_SUBSCRIPTION"] = sub
			if code, _, errs := cli(t, bad, "sync"); code != exitFailure || !strings.Contains(errs, want) || strings.Contains(errs, "401 unauthorized") {
				t.Errorf("sync %s (subscription %q) with a wrong key: exit %d, %q", db, sub, code, errs)
			}
		}
	}
}
