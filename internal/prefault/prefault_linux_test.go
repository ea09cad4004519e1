package prefault

import (
	"syscall"
	"testing"
	"unsafe"
)

// minorFaults is the process's minor page faults so far.
func minorFaults(t *testing.T) int64 {
	if raceEnabled {
		t.Skip("the race detector's shadow pages fault too")
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return ru.Minflt
}

// fresh maps n pages the process has never touched.
func fresh(t *testing.T, n int) []byte {
	b, err := syscall.Mmap(-1, 0, n*int(pageSize), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Munmap(b) })
	return b
}

// readThenWrite reads one byte of each page, then writes one: the order of the collector scanning a block before
// it is filled, or of a hash table probe before its insert.
func readThenWrite(b []byte) {
	var sum byte
	for off := 0; off < len(b); off += int(pageSize) {
		sum += b[off]
	}
	sink = sum
	for off := 0; off < len(b); off += int(pageSize) {
		b[off+1] = 1
	}
}

var sink byte // keeps the reads

// TestWrittenPagesFaultOnce maps fresh pages and counts the faults of reading then writing each one: twice per
// page untouched (zero page, then the copy on write), none after Range.
func TestWrittenPagesFaultOnce(t *testing.T) {
	const pages = 2048
	cold := fresh(t, pages)
	before := minorFaults(t)
	readThenWrite(cold)
	if got := minorFaults(t) - before; got < 2*pages*9/10 {
		t.Fatalf("reading then writing %d untouched pages took %d faults; the test expects about two per page", pages, got)
	}

	warm := fresh(t, pages)
	before = minorFaults(t)
	Slice(warm)
	if got := minorFaults(t) - before; got < pages*9/10 || got > pages*11/10 {
		t.Fatalf("touching %d pages took %d faults, want one per page", pages, got)
	}
	before = minorFaults(t)
	readThenWrite(warm)
	if got := minorFaults(t) - before; got > pages/10 {
		t.Fatalf("reading then writing %d touched pages took %d faults, want none", pages, got)
	}
}

// TestValuesKept checks that touching leaves every byte as it was, for ranges at any alignment and length, and
// reaches the last page of a range that ends just past a page boundary.
func TestValuesKept(t *testing.T) {
	b := fresh(t, 4)
	for i := range b {
		b[i] = byte(i*7 + 3)
	}
	for _, r := range [][2]int{{0, len(b)}, {1, 4095}, {3, 4097}, {4093, 8}, {5, 2}, {0, 0}, {4094, 4}, {1, len(b) - 1}} {
		Range(unsafe.Pointer(&b[r[0]]), uintptr(r[1]))
	}
	for i := range b {
		if b[i] != byte(i*7+3) {
			t.Fatalf("byte %d changed to %d", i, b[i])
		}
	}
	type wide struct{ a, b int64 }
	s := Slice(make([]wide, 3000))
	if len(s) != 3000 || s[2999] != (wide{}) {
		t.Fatal("Slice changed its slice")
	}
	if len(Slice([]wide(nil))) != 0 {
		t.Fatal("empty slice")
	}
}

// TestLastPageReached maps a fresh range that starts near the end of a page and ends just into its third page, and
// checks that reading then writing its last page after Range does not fault.
func TestLastPageReached(t *testing.T) {
	b := fresh(t, 3)
	start := int(pageSize) - 8
	n := int(pageSize) + 16 // ends 8 bytes into the third page
	Range(unsafe.Pointer(&b[start]), uintptr(n))
	before := minorFaults(t)
	last := start + n - 1
	sink = b[last]
	b[last] = sink + 1
	if got := minorFaults(t) - before; got != 0 {
		t.Fatalf("the range's last page faulted %d times after Range", got)
	}
}
