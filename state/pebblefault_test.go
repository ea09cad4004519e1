package state

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/clinksql/clinksql/sqlerr"
)

// fillAndPersist writes n keys in each of rounds checkpoints, persisting each under root/chk-<i>.
func fillAndPersist(t *testing.T, b Backend, root string, rounds, n int) (string, error) {
	t.Helper()
	var last string
	for r := 0; r < rounds; r++ {
		for i := 0; i < n; i++ {
			b.Put(KeyedKey(i%128, 1, []byte(fmt.Sprintf("key-%d-%06d", r, i))), []byte(strings.Repeat("v", 100)))
		}
		snap, err := b.Capture(uint64(r + 1))
		if err != nil {
			return last, err
		}
		path := filepath.Join(root, fmt.Sprintf("chk-%d", r+1))
		if err := snap.Persist(path); err != nil {
			return last, err
		}
		last = path
	}
	return last, nil
}

// Pins that a full disk under one store's MANIFEST write (Pebble calls its Logger's Fatalf, whose default exits
// the process: "pebble: MANIFEST flush failed" took the whole server down) fails that store only: the operation
// returns the error, ENOSPC stays in its chain (53100 disk_full at the SQL edge), every later operation of the
// store fails the same way, and the process goes on. Without the fix this test binary exits.
func TestPebbleFullDiskFailsTheStoreNotTheProcess(t *testing.T) {
	var full atomic.Bool
	enospc := errorfs.InjectorFunc(func(op errorfs.Op) error {
		if full.Load() && op.Kind.ReadOrWrite() == errorfs.OpIsWrite && strings.Contains(op.Path, "MANIFEST") {
			return &os.PathError{Op: "write", Path: op.Path, Err: syscall.ENOSPC}
		}
		return nil
	})
	root := t.TempDir()
	b, err := OpenPebble(Options{Dir: filepath.Join(root, "work"), SharedDir: filepath.Join(root, "shared"),
		PebbleFS: errorfs.Wrap(vfs.Default, enospc)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fillAndPersist(t, b, root, 2, 50); err != nil {
		t.Fatal(err)
	}
	full.Store(true)
	// Enough checkpoints that the persisted deltas are ingested, which writes the MANIFEST.
	_, err = fillAndPersist(t, b, root, maxUnflushed+1, 50)
	if err == nil {
		t.Fatal("no error from a store whose MANIFEST cannot be written")
	}
	if !errors.Is(err, syscall.ENOSPC) || sqlerr.As(err).Code != sqlerr.DiskFull {
		t.Fatalf("err %v (SQLSTATE %s), want ENOSPC in its chain and 53100", err, sqlerr.As(err).Code)
	}
	if _, err2 := b.Capture(100); !errors.Is(err2, syscall.ENOSPC) {
		t.Fatalf("Capture after the fault = %v, want the store's fault", err2)
	}
	if _, _, err2 := b.Get([]byte("absent")); !errors.Is(err2, syscall.ENOSPC) {
		t.Fatalf("Get after the fault = %v, want the store's fault", err2)
	}
	full.Store(false)
	_ = b.Close() // a failed store still closes
}

// Pins that a corrupt sstable in a checkpoint (Pebble's DataCorruption event, whose default exits the process:
// one damaged job put the whole server into a crash loop) refuses that one restore, naming the table, and nothing
// else.
func TestPebbleCorruptSSTableFailsTheStoreNotTheProcess(t *testing.T) {
	root := t.TempDir()
	shared := filepath.Join(root, "shared")
	b, err := OpenPebble(Options{Dir: filepath.Join(root, "work"), SharedDir: shared})
	if err != nil {
		t.Fatal(err)
	}
	chk, err := fillAndPersist(t, b, root, 1, 3000)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	ssts, _ := filepath.Glob(filepath.Join(shared, "*.sst"))
	if len(ssts) != 1 {
		t.Fatalf("want one delta sstable, have %v", ssts)
	}
	data, err := os.ReadFile(ssts[0])
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/4] ^= 0xFF // inside a data block, far from the footer and index
	if err := os.WriteFile(ssts[0], data, 0o644); err != nil {
		t.Fatal(err)
	}
	// The listing's checksum of the delta refuses it at restore, naming the table; a damaged block found by a
	// read after the restore is TestCorruptTableFailsTheReadNotTheProcess.
	_, err = OpenPebble(Options{Dir: filepath.Join(root, "restored"), SharedDir: shared, RestorePath: chk})
	if c, ok := IsCorrupt(err); !ok || c.Path != ssts[0] {
		t.Fatalf("restore from a corrupt sstable: %v, want a CorruptError naming %s", err, ssts[0])
	}
}

// failLinkFS refuses the hard links of an ingest while fail is set.
type failLinkFS struct {
	FS
	fail atomic.Bool
}

func (f *failLinkFS) Link(o, n string) error {
	if f.fail.Load() && strings.Contains(n, ingestFile) {
		return errors.New("link refused")
	}
	return f.FS.Link(o, n)
}

// Pins the background ingest (ingestLater): the Persist that starts it succeeds (its delta is durable), a failed
// ingest fails the next Persist with its error, and once the ingest goes through every value is there, in the
// store and in a restore of its last checkpoint.
func TestBackgroundIngestFailureFailsTheNextPersist(t *testing.T) {
	root := t.TempDir()
	fsys := &failLinkFS{FS: OS}
	shared := filepath.Join(root, "shared")
	b, err := OpenPebble(Options{Dir: filepath.Join(root, "work"), SharedDir: shared, FS: fsys})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	persist := func(r int) error {
		b.Put(KeyedKey(r%128, 1, []byte(fmt.Sprintf("key-%03d", r))), []byte(fmt.Sprint(r)))
		snap, err := b.Capture(uint64(r))
		if err != nil {
			return err
		}
		return snap.Persist(filepath.Join(root, fmt.Sprintf("chk-%d", r)))
	}
	r := 1
	for ; r < maxUnflushed; r++ {
		if err := persist(r); err != nil {
			t.Fatal(err)
		}
	}
	fsys.fail.Store(true)
	if err := persist(r); err != nil { // starts the ingest, which fails
		t.Fatalf("persist %d: %v", r, err)
	}
	r++
	if err := persist(r); err == nil || !strings.Contains(err.Error(), "link refused") {
		t.Fatalf("persist %d after a failed ingest: %v, want the ingest's error", r, err)
	}
	fsys.fail.Store(false)
	r++
	if err := persist(r); err != nil {
		t.Fatalf("persist %d: %v", r, err)
	}
	check := func(be Backend, what string) {
		for k := 1; k <= r; k++ {
			v, ok, err := be.Get(KeyedKey(k%128, 1, []byte(fmt.Sprintf("key-%03d", k))))
			if err != nil || !ok || string(v) != fmt.Sprint(k) {
				t.Fatalf("%s: key %d = %q, %v, %v", what, k, v, ok, err)
			}
		}
	}
	check(b, "store")
	restored, err := OpenPebble(Options{Dir: filepath.Join(root, "restored"), SharedDir: shared,
		RestorePath: filepath.Join(root, fmt.Sprintf("chk-%d", r))})
	if err != nil {
		t.Fatal(err)
	}
	defer restored.Close()
	check(restored, "restore")
}
