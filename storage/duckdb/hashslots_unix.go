//go:build unix

package duckdb

import (
	"syscall"
	"unsafe"
)

// hashSlots is n empty slots of a set of hashes, mapped off Go's heap:
// the garbage collector lets the heap grow to twice what is live, so a
// 64 MiB set on the heap let as much garbage (the runs' lists of hashes)
// pile up beside it before a collection. free unmaps it; the slots must
// not be used after.
func hashSlots(n int) (slots []uint32, free func()) {
	b, err := syscall.Mmap(-1, 0, n*4, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil || n == 0 {
		return make([]uint32, n), func() {}
	}
	return unsafe.Slice((*uint32)(unsafe.Pointer(&b[0])), n), func() { _ = syscall.Munmap(b) }
}
