package storage

import (
	"context"
	"slices"
	"sync"
)

// registryMemo keeps the registry's list (Datasets, DatasetStates) as
// last read outside a transaction, while a caller's scope (DB.Memo) is
// open and no transaction has begun or ended since. A sync reads the
// list before its walk (what it holds, what to repair, the manifest's
// jobs) and again after it (what moved, the attachments): eight reads of
// an unchanged registry in a one-version sync, each about 1 ms on a
// DuckDB file and a round trip on PostgreSQL.
//
// Every write to the registry runs in a storage.Tx (Begin), so a
// transaction's begin and end are the only points where the list can
// change under this process; nothing else writes while the scope is
// open: the file (DuckDB's lock) or the database (the writer's advisory
// lock) is this process's, and a scope lasts one sync.
type registryMemo struct {
	mu     sync.Mutex
	scopes int
	gen    uint64     // moved by every transaction's begin and end
	list   []*Dataset // Datasets' answer since gen last moved; nil: none kept
}

// Memo opens a scope in which the registry's list is read once for as
// long as no transaction begins or ends; end closes it. Scopes nest.
func (db *DB) Memo() (end func()) {
	m := &db.memo
	m.mu.Lock()
	m.scopes++
	m.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			m.mu.Lock()
			defer m.mu.Unlock()
			if m.scopes--; m.scopes == 0 {
				m.list = nil
			}
		})
	}
}

// moved marks a transaction's begin or end: what was kept may be stale.
func (m *registryMemo) moved() {
	m.mu.Lock()
	m.gen++
	m.list = nil
	m.mu.Unlock()
}

// lookup gives the kept list (without columns for states), or ok false
// with the generation a read starting now keeps it at; scoped tells
// whether a scope is open.
func (m *registryMemo) lookup(states bool) (ds []*Dataset, gen uint64, scoped, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.scopes == 0 {
		return nil, 0, false, false
	}
	if m.list != nil {
		return cloneDatasets(m.list, states), m.gen, true, true
	}
	return nil, m.gen, true, false
}

// keep stores a list read at gen, unless a transaction began or ended
// since (the read may have seen either side of it).
func (m *registryMemo) keep(ds []*Dataset, gen uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.scopes == 0 || gen != m.gen {
		return
	}
	m.list = cloneDatasets(ds, false)
	if m.list == nil {
		m.list = []*Dataset{} // an empty registry is kept too
	}
}

// cloneDatasets copies a list deeply enough that a caller may change its
// rows (their slices included); noColumns leaves each row's Columns
// empty, as DatasetStates reads them.
func cloneDatasets(ds []*Dataset, noColumns bool) []*Dataset {
	if ds == nil {
		return nil
	}
	out := make([]*Dataset, len(ds))
	for i, d := range ds {
		c := *d
		c.KeyColumns = slices.Clone(d.KeyColumns)
		if noColumns {
			c.Columns = c.Columns[:0:0] // as DatasetStates reads them: empty
		} else {
			c.Columns = slices.Clone(d.Columns)
		}
		out[i] = &c
	}
	return out
}

// memoList is Datasets (states false) or DatasetStates through the memo;
// read is the query itself. Within a scope, DatasetStates reads the whole
// list, columns included, and keeps it: a sync reads the list whole
// before and after its walk anyway, and both reads are then one.
func (db *DB) memoList(ctx context.Context, states bool, read func() ([]*Dataset, error)) ([]*Dataset, error) {
	ds, gen, scoped, ok := db.memo.lookup(states)
	if ok {
		return ds, nil
	}
	if !scoped {
		return read()
	}
	if states {
		read = func() ([]*Dataset, error) { return listDatasets(ctx, db.sql) }
	}
	ds, err := read()
	if err != nil {
		return nil, err
	}
	db.memo.keep(ds, gen)
	if states {
		return cloneDatasets(ds, true), nil
	}
	return ds, nil
}
