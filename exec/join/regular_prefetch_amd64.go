package join

import "unsafe"

// prefetch2 asks the CPU to fetch the two cache lines from p into its caches, without waiting for them: a pass over
// a batch calls it some rows ahead of the row it works on, so the misses of the rows ahead overlap its work. It
// never faults (an invalid address is ignored), and p is not kept.
//
//go:noescape
func prefetch2(p unsafe.Pointer)

// prefetch1 is prefetch2 for the one line at p.
//
//go:noescape
func prefetch1(p unsafe.Pointer)
