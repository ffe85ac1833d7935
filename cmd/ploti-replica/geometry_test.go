package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ploti-replica/ploti-replica/replica"
)

// --geometry wkb stores standard WKB, the file
// remembers it (a later sync without the flag keeps it), status says how
// the file stores geometry and who reads it, and another value is a usage
// error.
func TestSync_geometry(t *testing.T) {
	_, d, vars := demoWorld(t)
	if code, _, stderr := cli(t, vars, "sync", "--geometry", "geojson"); code != exitUsage || !strings.Contains(stderr, `--geometry "geojson": want wkb or geometry`) {
		t.Fatalf("sync --geometry geojson: exit %d, %q", code, stderr)
	}
	if code, out, stderr := cli(t, vars, "sync", "--geometry", "wkb"); code != exitOK {
		t.Fatalf("sync --geometry wkb: exit %d\n%s\n%s", code, out, stderr)
	}
	must(t, d.Next(t.Context()))
	if code, out, stderr := cli(t, vars, "sync"); code != exitOK {
		t.Fatalf("sync: exit %d\n%s\n%s", code, out, stderr)
	}
	_, out, _ := cli(t, vars, "status")
	if !strings.Contains(out, "geometry:      wkb: standard WKB in BLOB columns, read by every DuckDB client") {
		t.Fatalf("status does not say the file stores WKB:\n%s", out)
	}
	_, out, _ = cli(t, vars, "status", "--json")
	var st replica.Status
	if err := json.Unmarshal([]byte(out), &st); err != nil || st.Geometry != "wkb" {
		t.Fatalf("status --json: geometry %q (%v)\n%s", st.Geometry, err, out)
	}
	if code, _, stderr := cli(t, vars, "sync", "--geometry", "geometry"); code != exitOK {
		t.Fatalf("sync --geometry geometry: exit %d, %s", code, stderr)
	}
	if _, out, _ := cli(t, vars, "status"); !strings.Contains(out, "geometry:      geometry: DuckDB GEOMETRY, read as geometry by DuckDB 1.5 only") {
		t.Fatalf("status after converting back:\n%s", out)
	}
}
