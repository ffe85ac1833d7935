package replica

import (
	"path/filepath"
	"strings"
	"testing"
)

// What goes with a file is beside it; what goes with a database is named
// from its URL without the password, the same for every process.
func TestLocation_besideAFileAndNamedForADatabase(t *testing.T) {
	if got := SpoolDir("data/r.duckdb", ""); got != "data/r.duckdb.spool" {
		t.Errorf("a file's spool: %s", got)
	}
	if got := SpoolDir("data/r.duckdb", "/big"); got != filepath.Join("/big", "r.duckdb.spool") {
		t.Errorf("a file's spool under /big: %s", got)
	}
	if got := InboxQueuePath("data/r.duckdb"); got != "data/r.duckdb.inbox" {
		t.Errorf("a file's inbox queue: %s", got)
	}
	if got := SeenPath("data/r.duckdb", "member"); got != "data/r.duckdb.member.seen" {
		t.Errorf("a file's member webhook ids: %s", got)
	}
	a, b := "postgres://u:secret@db.example/r", "postgres://u:other@db.example/r"
	if Name(a) == a || strings.Contains(Name(a), "secret") {
		t.Errorf("Name(%s) = %s: the password shows", a, Name(a))
	}
	for _, f := range []func(string) string{func(w string) string { return SpoolDir(w, "") }, InboxQueuePath,
		func(w string) string { return SeenPath(w, "") }} {
		p := f(a)
		if strings.Contains(p, "secret") || p != f(b) {
			t.Errorf("a database's place %s (%s with another password): want one named without the password", p, f(b))
		}
	}
	if !Exists(a) || Exists(filepath.Join(t.TempDir(), "none.duckdb")) {
		t.Error("Exists: a database is there to open, a missing file is not")
	}
	if FilesOf(a) != nil {
		t.Errorf("a database has files: %v", FilesOf(a))
	}
}
