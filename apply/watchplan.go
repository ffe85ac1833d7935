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
	p := &watchPlan{}
	state := map[string]int{}
	from := map[string]rowFrom{}
	held := func(id string, v int, kind string) error {
		switch state[id] {
		case goneRecord:
			return fmt.Errorf("version %d %s id %s, which an earlier version removed or renamed", v, kind, id)
		case unknownRecord:
			p.merge.Held = append(p.merge.Held, storage.Touch{ID: id, Version: v, Change: kind})
		}
		return nil
	}
	bring := func(id string, v int, kind string) error {
		switch state[id] {
		case presentRecord:
			return fmt.Errorf("version %d %s id %s, which an earlier version added", v, kind, id)
		case unknownRecord:
			p.merge.New = append(p.merge.New, storage.Touch{ID: id, Version: v, Change: kind})
		}
		return nil
	}
	for _, vc := range versions {
		v := vc.Version
		listed := map[string]bool{}
		list := func(id string) error {
			if id == "" {
				return fmt.Errorf("version %d lists a change without a record id", v)
			}
			if listed[id] {
				return fmt.Errorf("version %d lists id %s twice", v, id)
			}
			listed[id] = true
			return nil
		}
		for _, ch := range vc.Changes {
			if err := list(ch.RecordID); err != nil {
				return nil, err
			}
			var err error
			switch ch.Change {
			case ploti.ChangeAdded:
				err = bring(ch.RecordID, v, "added")
				state[ch.RecordID], from[ch.RecordID] = presentRecord, rowFrom{v, ch.RowInFile}
				p.added++
			case ploti.ChangeChanged:
				err = held(ch.RecordID, v, "changed")
				state[ch.RecordID], from[ch.RecordID] = presentRecord, rowFrom{v, ch.RowInFile}
				p.changed++
			case ploti.ChangeRemoved:
				err = held(ch.RecordID, v, "removed")
				state[ch.RecordID] = goneRecord
				delete(from, ch.RecordID)
				p.removed++
			case ploti.ChangeRenamed:
				if ch.PreviousRecordID == "" {
					return nil, fmt.Errorf("version %d renames id %s without its previousRecordId", v, ch.RecordID)
				}
				if err := list(ch.PreviousRecordID); err != nil {
					return nil, err
				}
				if err := held(ch.PreviousRecordID, v, "renamed"); err != nil {
					return nil, err
				}
				state[ch.PreviousRecordID] = goneRecord
				delete(from, ch.PreviousRecordID)
				err = bring(ch.RecordID, v, "renamed to")
				state[ch.RecordID], from[ch.RecordID] = presentRecord, rowFrom{v, ch.RowInFile}
				p.merge.Renames = append(p.merge.Renames, storage.Rename{Version: v, From: ch.PreviousRecordID, To: ch.RecordID})
				p.renamed++
			default:
				return nil, fmt.Errorf("version %d lists id %s with change %q, none the docs name", v, ch.RecordID, ch.Change)
			}
			if err != nil {
				return nil, err
			}
			p.merge.Log = append(p.merge.Log, storage.Touch{ID: ch.RecordID, Version: v, Change: ch.Change})
		}
	}
	p.rowSources(versions, from)
	return p, nil
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
