//go:build unix

package duckdb

import (
	"sync/atomic"
	"syscall"
	"unsafe"
)

// slotMaps counts the mappings hashSlots made and free has not unmapped:
// the tests hold every load to giving its set back.
var slotMaps atomic.Int64

// hashSlots is n empty slots of a set of hashes, mapped off Go's heap:
// the garbage collector lets the heap grow to twice what is live, so a
// 64 MiB set on the heap let as much garbage (the runs' lists of hashes)
// pile up beside it before a collection. free unmaps it (a set that
// could not be mapped is on the heap, and free does nothing); the slots
// must not be used after.
func hashSlots(n int) (slots []uint32, free func()) {
	if n == 0 {
		return nil, func() {}
	}
	b, err := syscall.Mmap(-1, 0, n*4, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return make([]uint32, n), func() {}
	}
	slotMaps.Add(1)
	return unsafe.Slice((*uint32)(unsafe.Pointer(&b[0])), n), func() {
		slotMaps.Add(-1)
		_ = syscall.Munmap(b)
	}
}
