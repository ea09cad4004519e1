package state

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Pins issue 11: a corrupt block in a keyed-state table made Pebble's default DataCorruption listener call
// Fatalf, exiting the whole server. The read now fails with a *CorruptError naming the snapshot's shared table
// (the working table is a hard link of it), and the process goes on.
func TestCorruptTableFailsTheReadNotTheProcess(t *testing.T) {
	restoreFilter = false // its read of the restored keys would cache the blocks damaged below
	defer func() { restoreFilter = true }()
	root := t.TempDir()
	shared := filepath.Join(root, "shared")
	b, err := OpenPebble(Options{Dir: filepath.Join(root, "a"), SharedDir: shared})
	if err != nil {
		t.Fatal(err)
	}
	val := []byte(strings.Repeat("v", 100))
	for i := 0; i < 3000; i++ {
		b.Put([]byte(fmt.Sprintf("key-%05d", i)), val)
	}
	snap, err := b.Capture(1)
	if err != nil {
		t.Fatal(err)
	}
	listing := filepath.Join(root, "chk-1")
	if err := snap.Persist(listing); err != nil {
		t.Fatal(err)
	}
	b.Close()
	tables, _ := filepath.Glob(filepath.Join(shared, "*.sst"))
	if len(tables) != 1 {
		t.Fatalf("shared tables %v, want one delta", tables)
	}

	r, err := OpenPebble(Options{Dir: filepath.Join(root, "b"), SharedDir: shared, RestorePath: listing})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// Damage the data blocks (the first part of the table; its first and last blocks may be cached by the ingest).
	data, err := os.ReadFile(tables[0])
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(tables[0], os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for off := 8 << 10; off < len(data)*2/3; off += 512 {
		if _, err := f.WriteAt([]byte{data[off] ^ 0xff}, int64(off)); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()

	// A batched lookup fails too (first: the store fails at the first damaged block it meets), although its last
	// keys sit in blocks left whole: Pebble clears an iterator's error at each seek, so an error met on one key
	// must be taken before the next seek (it was lost, and a key of a damaged block read as absent: an updating
	// aggregate then counted its group again from zero).
	keys := make([][]byte, 3000)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("key-%05d", i))
	}
	found := 0
	err = GetMany(r, keys, func(int, []byte) error { found++; return nil })
	if c, ok := IsCorrupt(err); !ok || c.Path != tables[0] {
		t.Fatalf("GetMany over a damaged table: %v (%d of %d keys found), want a CorruptError naming %s", err,
			found, len(keys), tables[0])
	}

	err = r.Scan([]byte("key-"), func(k, v []byte) error { return nil })
	if c, ok := IsCorrupt(err); !ok || c.Path != tables[0] {
		t.Fatalf("Scan over a damaged table: %v, want a CorruptError naming %s", err, tables[0])
	}
}

// Pins: a re-based chain records its base's files (sizes, and checksums of the small ones) and deltas (size and
// checksum) in the listing, so a restore refuses, naming the file, a MANIFEST cut short (Pebble's own record
// checksums cannot see a cut at a record boundary: the store would open as an older one) or a delta changed.
func TestChainRecordsItsFiles(t *testing.T) {
	root := t.TempDir()
	shared := filepath.Join(root, "shared")
	b, err := OpenPebble(Options{Dir: filepath.Join(root, "a"), SharedDir: shared})
	if err != nil {
		t.Fatal(err)
	}
	var listing string
	for id := uint64(1); id <= maxChainDeltas+2; id++ { // a re-base, then a delta after it
		b.Put([]byte(fmt.Sprintf("key-%05d", id)), []byte("v"))
		snap, err := b.Capture(id)
		if err != nil {
			t.Fatal(err)
		}
		listing = filepath.Join(root, fmt.Sprintf("chk-%d", id))
		if err := snap.Persist(listing); err != nil {
			t.Fatal(err)
		}
	}
	b.Close()
	manifests, _ := filepath.Glob(filepath.Join(shared, "base-*", "MANIFEST-*"))
	deltas, _ := filepath.Glob(filepath.Join(shared, fmt.Sprintf("%d.sst", maxChainDeltas+2)))
	if len(manifests) != 1 || len(deltas) != 1 {
		t.Fatalf("base MANIFESTs %v, last deltas %v", manifests, deltas)
	}
	if err := VerifySnapshot(OS, listing, true); err != nil {
		t.Fatalf("undamaged: %v", err)
	}
	for _, damaged := range []string{manifests[0], deltas[0]} {
		data, err := os.ReadFile(damaged)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(damaged, data[:len(data)-1], 0o644); err != nil {
			t.Fatal(err)
		}
		if err := VerifySnapshot(OS, listing, true); err == nil {
			t.Fatalf("%s cut short: VerifySnapshot passed", damaged)
		} else if c, ok := IsCorrupt(err); !ok || c.Path != damaged {
			t.Fatalf("%s cut short: VerifySnapshot %v", damaged, err)
		}
		_, err = OpenPebble(Options{Dir: filepath.Join(root, "r"), SharedDir: shared, RestorePath: listing})
		if c, ok := IsCorrupt(err); !ok || c.Path != damaged {
			t.Fatalf("%s cut short: restore %v", damaged, err)
		}
		os.WriteFile(damaged, data, 0o644)
	}
}
