package bench

import (
	"context"
	"strings"
	"testing"
)

// The scale section measures every size it is given, each step beside
// DuckDB alone, checks the rows of both files after each step (a merge
// that lost rows fails the run), and puts the sizes side by side.
func TestScale_everySizeSideBySide(t *testing.T) {
	if testing.Short() {
		t.Skip("loads and merges tables")
	}
	rep, err := Run(context.Background(), Config{Rows: []int64{20000, 40000}, Repeat: 1, Only: []string{"scale"}})
	if err != nil {
		t.Fatal(err)
	}
	per := map[string]int{}
	for _, l := range rep.Lines {
		if !strings.HasPrefix(l.What, "8. scale: ") {
			t.Fatalf("a line of another section: %+v", l)
		}
		per[l.Size[:strings.Index(l.Size, " rows")]]++
		if l.Ratio <= 0 {
			t.Fatalf("a line without a ratio: %+v", l)
		}
	}
	// load, two merges, reload, disk (no binary here for the RSS child)
	if per["20k"] != 5 || per["40k"] != 5 {
		t.Fatalf("lines by size: %v", per)
	}
	notes := strings.Join(rep.Notes, "\n")
	if !strings.Contains(notes, "20k rows: load") || !strings.Contains(notes, "40k rows: load") {
		t.Fatalf("no side-by-side note: %s", notes)
	}
}
