package apply

import (
	"fmt"
	"slices"

	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
)

// VersionChanges is every page of one watched version's changes: the
// kinds and ids in memory, the rows that came with them in an NDJSON file
// (Path; a change with RowInFile has its row there).
type VersionChanges struct {
	ploti.ChangesPage
	Path string
}

// RowSet is a read of a watched dataset's rows, spooled to an NDJSON file
// (Path, "" when no row came); every row is of Version (nil before the
// dataset's first version), with Columns its columns at that version.
type RowSet struct {
	Version *int
	Columns []ploti.Column
	Path    string
	Rows    int64
}

// watchPlan is what recorded versions do to a table held at an older
// version: the merge for storage, and the ids whose rows must be read now.
type watchPlan struct {
	merge storage.WatchMerge
	// read are the records that exist after the versions but whose row
	// did not come with the changes (an older version's, docs/wire.md 9
	// reading 2): their rows are read now, by id.
	read []string
	// counts by kind, for the result.
	added, changed, removed, renamed int64
}

// Record states while versions are played in order.
const (
	unknownRecord = iota // untouched so far: the held table says
	presentRecord
	goneRecord
)

// rowFrom is where the row of a record that exists after the versions
// comes from: a version's changes file, or a read by id.
type rowFrom struct {
	version int
	inFile  bool
}

// planWatch plays recorded versions (oldest first, each following the one
// before by previousVersion, the first the held version) over the held
// table's ids, symbolically: which held ids they touch (deleted, and each
// must be held), which ids they bring (none may be held), which records
// exist after them and where their rows come from, and each version's log.
// Anything the versions cannot mean is bad input naming the version: an id
// listed twice in one version, a change of an id that is no longer there,
// an id added that is, a kind of change the docs do not name.
func planWatch(versions []*VersionChanges) (*watchPlan, error) {
	pl := &planner{p: &watchPlan{}, state: map[string]int{}, from: map[string]rowFrom{}}
	for _, vc := range versions {
		listed := map[string]bool{}
		for _, ch := range vc.Changes {
			if err := pl.change(vc.Version, ch, listed); err != nil {
				return nil, err
			}
			pl.p.merge.Log = append(pl.p.merge.Log, storage.Touch{ID: ch.RecordID, Version: vc.Version, Change: ch.Change})
		}
	}
	pl.p.rowSources(versions, pl.from)
	return pl.p, nil
}

// planner is planWatch's walk: each record's state after the versions
// read so far, and where its row comes from.
type planner struct {
	p     *watchPlan
	state map[string]int
	from  map[string]rowFrom
}

// list notes id as listed by version v (listed: the ids it listed so
// far), refusing an empty id or one listed twice.
func list(v int, id string, listed map[string]bool) error {
	if id == "" {
		return fmt.Errorf("version %d lists a change without a record id", v)
	}
	if listed[id] {
		return fmt.Errorf("version %d lists id %s twice", v, id)
	}
	listed[id] = true
	return nil
}

// held notes that version v's change (kind) needs id held: a record the
// replica holds now, unless an earlier version took it away.
func (pl *planner) held(id string, v int, kind string) error {
	switch pl.state[id] {
	case goneRecord:
		return fmt.Errorf("version %d %s id %s, which an earlier version removed or renamed", v, kind, id)
	case unknownRecord:
		pl.p.merge.Held = append(pl.p.merge.Held, storage.Touch{ID: id, Version: v, Change: kind})
	}
	return nil
}

// bring notes that version v's change (kind) brings id in: a record the
// replica must not hold, unless an earlier version took it away.
func (pl *planner) bring(id string, v int, kind string) error {
	switch pl.state[id] {
	case presentRecord:
		return fmt.Errorf("version %d %s id %s, which an earlier version added", v, kind, id)
	case unknownRecord:
		pl.p.merge.New = append(pl.p.merge.New, storage.Touch{ID: id, Version: v, Change: kind})
	}
	return nil
}

// present and gone set a record's state after version v's change.
func (pl *planner) present(id string, v int, inFile bool) {
	pl.state[id], pl.from[id] = presentRecord, rowFrom{v, inFile}
}

func (pl *planner) gone(id string) {
	pl.state[id] = goneRecord
	delete(pl.from, id)
}

// change reads one change of version v into the plan.
func (pl *planner) change(v int, ch ploti.Change, listed map[string]bool) error {
	if err := list(v, ch.RecordID, listed); err != nil {
		return err
	}
	var err error
	switch ch.Change {
	case ploti.ChangeAdded:
		err = pl.bring(ch.RecordID, v, "added")
		pl.present(ch.RecordID, v, ch.RowInFile)
		pl.p.added++
	case ploti.ChangeChanged:
		err = pl.held(ch.RecordID, v, "changed")
		pl.present(ch.RecordID, v, ch.RowInFile)
		pl.p.changed++
	case ploti.ChangeRemoved:
		err = pl.held(ch.RecordID, v, "removed")
		pl.gone(ch.RecordID)
		pl.p.removed++
	case ploti.ChangeRenamed:
		err = pl.rename(v, ch, listed)
	default:
		return fmt.Errorf("version %d lists id %s with change %q, none the docs name", v, ch.RecordID, ch.Change)
	}
	return err
}

// rename reads a rename of version v: the previous id held and gone, the
// new one brought in.
func (pl *planner) rename(v int, ch ploti.Change, listed map[string]bool) error {
	if ch.PreviousRecordID == "" {
		return fmt.Errorf("version %d renames id %s without its previousRecordId", v, ch.RecordID)
	}
	if err := list(v, ch.PreviousRecordID, listed); err != nil {
		return err
	}
	if err := pl.held(ch.PreviousRecordID, v, "renamed"); err != nil {
		return err
	}
	pl.gone(ch.PreviousRecordID)
	err := pl.bring(ch.RecordID, v, "renamed to")
	pl.present(ch.RecordID, v, ch.RowInFile)
	pl.p.merge.Renames = append(pl.p.merge.Renames, storage.Rename{Version: v, From: ch.PreviousRecordID, To: ch.RecordID})
	pl.p.renamed++
	return err
}

// rowSources sorts the records that exist after the versions by where
// their rows come from: each version's file, or a read now.
func (p *watchPlan) rowSources(versions []*VersionChanges, from map[string]rowFrom) {
	byVersion := map[int][]string{}
	for id, f := range from {
		if f.inFile {
			byVersion[f.version] = append(byVersion[f.version], id)
		} else {
			p.read = append(p.read, id)
		}
	}
	slices.Sort(p.read)
	for _, vc := range versions {
		if ids := byVersion[vc.Version]; len(ids) > 0 {
			slices.Sort(ids)
			p.merge.Rows = append(p.merge.Rows, storage.RowSource{Path: vc.Path, IDs: ids})
		}
	}
}
