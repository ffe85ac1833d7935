package duckdb

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/ploti-replica/ploti-replica/storage"
)

// testGeometry is how the tests' files store geometry (Options.Geometry):
// PLOTI_TEST_GEOMETRY, or GeometryNative.
var testGeometry = os.Getenv("PLOTI_TEST_GEOMETRY")

// TestMain runs the package's tests twice: with geometry stored as
// DuckDB's GEOMETRY, then, in a child process of this test binary, as WKB
// (loads, merges, id maps, schema changes, watched rows and the
// refusals of bad input all work both ways). Fuzzing, benchmarks and
// listings run once.
func TestMain(m *testing.M) {
	code := m.Run()
	if code != 0 || testGeometry != "" || !rerun(os.Args[1:]) {
		os.Exit(code)
	}
	fmt.Println("storage: the tests again, with geometry stored as WKB (PLOTI_TEST_GEOMETRY=wkb)")
	cmd := exec.Command(os.Args[0], os.Args[1:]...)
	cmd.Env = append(os.Environ(), "PLOTI_TEST_GEOMETRY="+storage.GeometryWKB)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Println("storage: with geometry stored as WKB:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// rerun tells whether the test binary's arguments ask for tests only.
func rerun(args []string) bool {
	for _, a := range args {
		for _, once := range []string{"-test.fuzz", "-test.bench", "-test.list", "-test.run=^TestHelper"} {
			if strings.HasPrefix(a, once) && !strings.HasSuffix(a, "=") {
				return false
			}
		}
	}
	return true
}

// geomText is the SQL of a geometry column's WKT as the tests' files store
// it.
func geomText(col string) string {
	if testGeometry == storage.GeometryWKB {
		return "ST_AsText(ST_GeomFromWKB(" + col + "))"
	}
	return "ST_AsText(" + col + ")"
}

// geomType is the DuckDB type of a geometry column in the tests' files.
func geomType() string {
	if testGeometry == storage.GeometryWKB {
		return "BLOB"
	}
	return "GEOMETRY"
}

// eng is the file's own side of a transaction of the registry over it.
func eng(tx *storage.Tx) *Tx { return tx.Engine().(*Tx) }

// Of is the DuckDB file under db.
func Of(db *storage.DB) *DB { return db.Engine().(*DB) }
