// Package prefault makes the first access to each page of a fresh allocation a write.
//
// Go hands large allocations (over 32 KiB) straight from pages the kernel has never mapped, and skips zeroing
// them because they are known to be zero. When the first access to such a page is a read (a probe of an empty
// hash table slot, the collector scanning a block nothing has filled yet, a write barrier loading the old
// pointer), Linux maps the shared zero page read-only. The first write then faults again, replaces that mapping
// with a page of its own and must flush the old one from the TLB of every CPU running the process: an
// inter-processor interrupt, which on a virtual machine is an exit to the hypervisor. Measured on the 2-core
// bench VM, Nexmark q3 at parallelism 2 spent half its CPU in those flushes and in the page table lock they
// hold; writing each page first makes it one fault and no flush.
//
// The package owns nothing else. It never changes a byte's value (each touch is an atomic add of zero) and never
// allocates; callers use it right after they allocate a block they are about to fill.
package prefault

import (
	"os"
	"sync/atomic"
	"unsafe"
)

var pageSize = uintptr(os.Getpagesize())

// Slice writes to every page s's elements occupy, leaving their values as they are, and returns s.
func Slice[T any](s []T) []T {
	if len(s) == 0 {
		return s
	}
	var zero T
	Range(unsafe.Pointer(unsafe.SliceData(s)), uintptr(len(s))*unsafe.Sizeof(zero))
	return s
}

// Range writes to every page of [p, p+n), leaving the bytes as they are.
func Range(p unsafe.Pointer, n uintptr) {
	if n < 4 {
		return // too small to span a page boundary worth touching; the caller's own write does it
	}
	// Aligned 4-byte words, one per page: an atomic add is a write to the MMU even when it adds zero.
	start := (uintptr(p) + 3) &^ 3
	end := uintptr(p) + n - 4
	end &^= 3
	for a := start; a <= end; a += pageSize {
		atomic.AddUint32((*uint32)(unsafe.Add(p, a-uintptr(p))), 0)
	}
	if end >= start {
		atomic.AddUint32((*uint32)(unsafe.Add(p, end-uintptr(p))), 0)
	}
}
