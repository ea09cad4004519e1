//go:build !amd64

package join

import "unsafe"

// prefetch2 does nothing where there is no prefetch instruction wired up (see the amd64 version).
func prefetch2(unsafe.Pointer) {}

// prefetch1 does nothing where there is no prefetch instruction wired up (see the amd64 version).
func prefetch1(unsafe.Pointer) {}
