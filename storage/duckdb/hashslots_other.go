//go:build !unix

package duckdb

import "sync/atomic"

// slotMaps stays 0 here: no set is mapped.
var slotMaps atomic.Int64

// hashSlots is n empty slots of a set of hashes, on Go's heap here.
func hashSlots(n int) (slots []uint32, free func()) {
	return make([]uint32, n), func() {}
}
