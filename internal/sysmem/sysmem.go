// Package sysmem reads the machine's physical memory, from which the engine sizes its defaults (the state cache,
// the Go heap's soft limit). It owns nothing else and must never allocate or block: it is one system call.
package sysmem

import "syscall"

// Total is the machine's physical memory in bytes, or 0 when the kernel does not say.
func Total() int64 {
	var si syscall.Sysinfo_t
	if syscall.Sysinfo(&si) != nil {
		return 0
	}
	return int64(si.Totalram) * int64(si.Unit)
}
