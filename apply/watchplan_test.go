package apply

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
)

// vc builds a version's changes from "kind:id" items ("renamed:new<old"),
// a trailing "*" marking a change that came with its row.
func vc(version int, items ...string) *VersionChanges {
	out := &VersionChanges{Path: fmt.Sprintf("v%d.ndjson", version)}
	out.Version, out.ChangeLog = version, ploti.ChangeLogRecorded
	for _, it := range items {
		kind, id, _ := strings.Cut(it, ":")
		ch := ploti.Change{Change: kind}
		id, ch.RowInFile = strings.CutSuffix(id, "*")
		ch.RecordID, ch.PreviousRecordID, _ = strings.Cut(id, "<")
		out.Changes = append(out.Changes, ch)
	}
	return out
}

func touches(ts []storage.Touch) string {
	var s []string
	for _, t := range ts {
		s = append(s, fmt.Sprintf("%s@%d", t.ID, t.Version))
	}
	return strings.Join(s, " ")
}

func sources(rs []storage.RowSource) string {
	var s []string
	for _, r := range rs {
		s = append(s, r.Path+"="+strings.Join(r.IDs, ","))
	}
	return strings.Join(s, " ")
}

// planWatch: which held ids go (each must be held), which ids come (none
// may be), where each surviving record's row comes from, for one version
// and for a replica several versions behind (docs/wire.md 9, readings 1
// and 2: older versions' rows are read now, by their ids now).
func TestPlanWatch(t *testing.T) {
	for _, tc := range []struct {
		name                       string
		versions                   []*VersionChanges
		held, new, rows, read, log string
		renames                    string
	}{
		{name: "one version with its rows",
			versions: []*VersionChanges{vc(13, "added:r9*", "changed:r2*", "removed:r5", "renamed:r7b<r7*")},
			held:     "r2@13 r5@13 r7@13", new: "r9@13 r7b@13", rows: "v13.ndjson=r2,r7b,r9",
			log: "r9@13 r2@13 r5@13 r7b@13", renames: "13:r7>r7b"},
		{name: "an older version without rows: read by id",
			versions: []*VersionChanges{vc(12, "added:a", "changed:b"), vc(13, "changed:c*")},
			held:     "b@12 c@13", new: "a@12", rows: "v13.ndjson=c", read: "a,b", log: "a@12 b@12 c@13"},
		{name: "three versions behind: the latest touch wins",
			versions: []*VersionChanges{
				vc(11, "added:a", "changed:b", "removed:c"),
				vc(12, "changed:a", "renamed:b2<b", "added:d"),
				vc(13, "removed:d", "changed:b2*", "added:c*")},
			held: "b@11 c@11", new: "a@11 b2@12 d@12", rows: "v13.ndjson=b2,c", read: "a",
			log: "a@11 b@11 c@11 a@12 b2@12 d@12 d@13 b2@13 c@13", renames: "12:b>b2"},
		{name: "a rename chain", versions: []*VersionChanges{vc(5, "renamed:x2<x"), vc(6, "renamed:x3<x2")},
			held: "x@5", new: "x2@5 x3@6", read: "x3", log: "x2@5 x3@6", renames: "5:x>x2 6:x2>x3"},
		{name: "added then removed", versions: []*VersionChanges{vc(5, "added:z"), vc(6, "removed:z")},
			new: "z@5", log: "z@5 z@6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := planWatch(tc.versions)
			if err != nil {
				t.Fatal(err)
			}
			var renames []string
			for _, r := range p.merge.Renames {
				renames = append(renames, fmt.Sprintf("%d:%s>%s", r.Version, r.From, r.To))
			}
			for _, c := range []struct{ what, got, want string }{
				{"held", touches(p.merge.Held), tc.held}, {"new", touches(p.merge.New), tc.new},
				{"rows", sources(p.merge.Rows), tc.rows}, {"read", strings.Join(p.read, ","), tc.read},
				{"log", touches(p.merge.Log), tc.log}, {"renames", strings.Join(renames, " "), tc.renames},
			} {
				if c.got != c.want {
					t.Errorf("%s = %q, want %q", c.what, c.got, c.want)
				}
			}
		})
	}
}

// "Bad input": an id listed twice, a change of an id a version
// before took away, a kind of change the docs do not name.
func TestPlanWatch_refusesWhatTheVersionsCannotMean(t *testing.T) {
	for _, tc := range []struct {
		name     string
		versions []*VersionChanges
		want     string
	}{
		{"an id listed twice", []*VersionChanges{vc(13, "changed:a", "removed:a")}, "version 13 lists id a twice"},
		{"a renamed id listed twice", []*VersionChanges{vc(13, "changed:a", "renamed:b<a")}, "version 13 lists id a twice"},
		{"a change of a removed id", []*VersionChanges{vc(12, "removed:a"), vc(13, "changed:a")}, "version 13 changed id a, which an earlier version removed"},
		{"a rename from a renamed id", []*VersionChanges{vc(12, "renamed:b<a"), vc(13, "renamed:c<a")}, "version 13 renamed id a"},
		{"an id added twice", []*VersionChanges{vc(12, "added:a"), vc(13, "added:a")}, "version 13 added id a, which an earlier version added"},
		{"a renamed without its old id", []*VersionChanges{vc(13, "renamed:b")}, "renames id b without its previousRecordId"},
		{"no record id", []*VersionChanges{vc(13, "changed:")}, "without a record id"},
		{"a kind the docs do not name", []*VersionChanges{vc(13, "moved:a")}, `change "moved"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := planWatch(tc.versions)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// Reading 5: a column the table lacks is added; one removed or retyped
// makes the dataset be read whole.
func TestColumnsNow(t *testing.T) {
	s := ploti.Column{Name: "s", Type: ploti.Type{Type: ploti.TypeString}}
	i := ploti.Column{Name: "i", Type: ploti.Type{Type: ploti.TypeInteger}}
	n := ploti.Column{Name: "i", Type: ploti.Type{Type: ploti.TypeNumber}}
	for _, tc := range []struct {
		name       string
		table, now []ploti.Column
		add        []string
		ok         bool
	}{
		{"same", []ploti.Column{s, i}, []ploti.Column{s, i}, nil, true},
		{"same in another order", []ploti.Column{s, i}, []ploti.Column{i, s}, nil, true},
		{"one added", []ploti.Column{s}, []ploti.Column{s, i}, []string{"i"}, true},
		{"one removed", []ploti.Column{s, i}, []ploti.Column{s}, nil, false},
		{"one retyped", []ploti.Column{s, i}, []ploti.Column{s, n}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			add, ok := columnsNow(tc.table, tc.now)
			var names []string
			for _, c := range add {
				names = append(names, c.Name)
			}
			if ok != tc.ok || !slices.Equal(names, tc.add) {
				t.Fatalf("add %v ok %v, want %v %v", names, ok, tc.add, tc.ok)
			}
		})
	}
}
