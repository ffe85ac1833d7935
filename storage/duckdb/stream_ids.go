package duckdb

import (
	"context"
	"fmt"
	"math/bits"
	"strconv"
	"strings"

	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/duckread"
)

// maxRunIDsBytes bounds the memory of runIDs's set of hashes: a snapshot
// of more rows than fit in it (about 44M) is checked once whole after
// its last byte, by DuckDB within its memory limit. A variable for the
// tests of that path.
var maxRunIDsBytes uint64 = 256 << 20

// runIDsChunk is at most how many rows' hashes one statement brings to
// Go, as a list of boxed values (about 24 bytes a row, 6 MiB a part): a
// run longer than that (the whole file when it is already on disk) is
// hashed in parts.
const runIDsChunk = 1 << 18

// runIDs checks a streamed snapshot's record ids run by run, while the
// rest of the file is still on the wire: DuckDB hashes each run's ids as
// soon as its rows are in, and the hashes go into an open-addressing set
// sized from the footer's row count, which counts every hash it sees
// again. A slot holds the hash's high 32 bits, its place in the set
// comes from the low ones: 4 bytes a slot, 64 MiB for 10M rows, and a
// hash seen "again" that was not (the same high bits in the same run of
// slots) about once in 200 loads of 10M rows, which the exact count
// then settles. After the last byte only the last run is left to hash, where a
// check of the whole file was a sort of every id's hash after it
// (0.55–0.96 s at 10M rows on two cores, most of the link's bootstrap's
// time past the wire). A check of its own in SQL, each run's hashes
// joined to the earlier runs', grew with the file and fell behind the
// wire (12.8 s against 12.0 s over the 50 MB/s link).
//
// A run reads bytes the download has written for good (GrowingFile.Have),
// the same bytes its rows were inserted from; the whole file's sha256 is
// matched before the counts are used, so what they were read from is what
// Ploti published. Equal hashes (a repeated id, or two ids that collide)
// are settled by the exact count over the verified file.
type runIDs struct {
	tx       *Tx
	src      string   // the file's read_parquet with file_row_number
	set      []uint32 // high 32 bits of each hash (0 is an empty slot); nil once given up (held)
	free     func()   // gives the set's memory back (hashSlots)
	used     int
	n, nulls int64
	again    int64 // hashes seen before: 0 means no id repeats
}

// newRunIDs is a check for a file whose footer counts rows rows, or nil
// when its set would pass maxRunIDsBytes or an eighth of a memory limit
// set (the footer is read before the file is verified: any count is
// possible).
func (tx *Tx) newRunIDs(src string, rows int64) *runIDs {
	limit := maxRunIDsBytes
	if m, ok := parseBytes(tx.db.opts.MemoryLimit); ok {
		limit = min(limit, m/8)
	}
	if rows < 0 || uint64(rows) > limit/4 {
		return nil
	}
	slots := uint64(1) << bits.Len64(uint64(rows+rows/2))
	if slots*4 > limit {
		return nil
	}
	set, free := hashSlots(int(slots))
	return &runIDs{tx: tx, src: src, set: set, free: free}
}

// release gives the set's memory back; held is false after it. Safe on
// nil and more than once.
func (r *runIDs) release() {
	if r == nil {
		return
	}
	r.set = nil
	if r.free != nil {
		r.free()
		r.free = nil
	}
}

// add hashes the ids of the file's rows [from, to), a run of row groups
// already on disk, and counts them, their nulls and the hashes seen
// before, in parts of at most runIDsChunk rows.
func (r *runIDs) add(ctx context.Context, from, to int64) error {
	for at := from; at < to && r.held(); at += runIDsChunk {
		if err := r.addPart(ctx, at, min(at+runIDsChunk, to)); err != nil {
			return err
		}
	}
	return nil
}

func (r *runIDs) addPart(ctx context.Context, from, to int64) error {
	id := storage.Ident(storage.ColRecordID)
	var n, nulls int64
	var hashes []any
	// A part of null ids only has no list: an empty one, not NULL.
	err := r.tx.tx.QueryRowContext(ctx, fmt.Sprintf(`SELECT count(*), count(*) - count(%[1]s),
		coalesce(list(hash(CAST(%[1]s AS VARCHAR))) FILTER (WHERE %[1]s IS NOT NULL), []) FROM %[2]s WHERE %[3]s`,
		id, r.src, rowRange(from, to))).Scan(&n, &nulls, &hashes)
	if err != nil {
		return fmt.Errorf("check record ids: %w", err)
	}
	r.n, r.nulls = r.n+n, r.nulls+nulls
	// A guard: the set never fills past three quarters, whatever the
	// footer said.
	if (r.used+len(hashes))*4 > len(r.set)*3 {
		r.release()
		return nil
	}
	for _, v := range hashes {
		h, ok := v.(uint64)
		if !ok {
			return fmt.Errorf("check record ids: a hash of %T", v)
		}
		r.note(h)
	}
	return nil
}

// note puts h in the set, counting it in again when it was there.
func (r *runIDs) note(h uint64) {
	hi := uint32(h >> 32)
	if hi == 0 {
		hi = 1 // 0 marks an empty slot
	}
	mask := uint64(len(r.set) - 1)
	i := h & mask
	for r.set[i] != 0 && r.set[i] != hi {
		i = (i + 1) & mask
	}
	if r.set[i] == hi {
		r.again++
		return
	}
	r.set[i] = hi
	r.used++
}

// held is whether the runs' check holds for the whole file: false for no
// check (nil) or one given up.
func (r *runIDs) held() bool { return r != nil && r.set != nil }

// counts are the rows the runs read, their null ids and, when a hash
// came again, the exact count of repeated ids in rel (the verified
// file's ids, recordIDsOf).
func (r *runIDs) counts(ctx context.Context, rel string) (n, nulls, dups int64, err error) {
	r.release()
	if r.again > 0 {
		if dups, err = duckread.RepeatedIDs(ctx, r.tx.tx, rel); err != nil {
			return 0, 0, 0, fmt.Errorf("check record ids: %w", err)
		}
	}
	return r.n, r.nulls, dups, nil
}

// parseBytes reads a size as DuckDB's memory_limit takes it ("1GB",
// "512MiB", "2.5 GB", "1000000"): false for none or one it does not read.
func parseBytes(s string) (uint64, bool) {
	s = strings.ToUpper(strings.TrimSpace(s))
	num := strings.TrimRight(s, "KMGTIB ")
	unit := strings.TrimSpace(s[len(num):])
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v <= 0 {
		return 0, false
	}
	scale := map[string]float64{"": 1, "B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
		"KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30, "TIB": 1 << 40}
	m, ok := scale[unit]
	if !ok {
		return 0, false
	}
	return uint64(v * m), true
}
