package state

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

type backendKind struct {
	name       string
	cacheBytes int64
	pebble     bool
}

var backendKinds = []backendKind{
	{name: "memory"},
	{name: "pebble", pebble: true},
	{name: "pebble-tiny-cache", pebble: true, cacheBytes: 300}, // evicts clean generations and reads constantly
}

func (k backendKind) open(t testing.TB, root, restore string) Backend {
	t.Helper()
	opts := Options{Dir: filepath.Join(root, "work"), RestorePath: restore, CacheBytes: k.cacheBytes}
	var b Backend
	var err error
	if k.pebble {
		b, err = OpenPebble(opts)
	} else {
		b, err = OpenMemory(opts)
	}
	if err != nil {
		t.Fatalf("open %s (restore %q): %v", k.name, restore, err)
	}
	return b
}

// scanAll returns the backend's view under prefix as a map, failing on out-of-order or duplicate keys.
func scanAll(t testing.TB, b Backend, prefix []byte) map[string]string {
	t.Helper()
	got := map[string]string{}
	var last []byte
	err := b.Scan(prefix, func(k, v []byte) error {
		if !bytes.HasPrefix(k, prefix) {
			return fmt.Errorf("key %q outside prefix %q", k, prefix)
		}
		if last != nil && bytes.Compare(last, k) >= 0 {
			return fmt.Errorf("scan order: %q after %q", k, last)
		}
		last = append(last[:0:0], k...)
		got[string(k)] = string(v)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func filterPrefix(m map[string]string, prefix string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		if strings.HasPrefix(k, prefix) {
			out[k] = v
		}
	}
	return out
}

// Pins: a value lost, resurrected or mis-ordered across dirty/pending/Pebble/cache layers, or a restore unlike its capture.
func TestBackendsAgreeWithMapModel(t *testing.T) {
	t.Setenv("CLINK_STATE_FSYNC", "0")
	for _, kind := range backendKinds {
		for _, seed := range []uint64{1, 2, 3} {
			t.Run(fmt.Sprintf("%s/seed%d", kind.name, seed), func(t *testing.T) {
				runModel(t, kind, seed, 2500)
			})
		}
	}
}

// The same with stripes from the first delta on: every delta is several tables, and compactions run per stripe.
func TestPebbleStripesAgreeWithMapModel(t *testing.T) {
	t.Setenv("CLINK_STATE_FSYNC", "0")
	defer func(n int) { stripeMinEntries = n }(stripeMinEntries)
	stripeMinEntries = 4
	for _, kind := range backendKinds[1:] {
		t.Run(kind.name, func(t *testing.T) { runModel(t, kind, 4, 1500) })
	}
}

func randKey(rng *rand.Rand) string {
	var sb strings.Builder
	sb.WriteByte([]byte{0x00, 0x01, 0xFF}[rng.IntN(3)])
	for n := rng.IntN(4); n > 0; n-- {
		sb.WriteByte("abc\xff"[rng.IntN(4)])
	}
	return sb.String()
}

func runModel(t *testing.T, kind backendKind, seed uint64, steps int) {
	rng := rand.New(rand.NewPCG(seed, seed*7))
	root := t.TempDir()
	b := kind.open(t, root, "")
	defer func() { b.Close() }()

	type captured struct {
		snap  Snapshot
		model map[string]string
	}
	type persisted struct {
		dir   string
		model map[string]string
	}
	model := map[string]string{}
	var pending []captured
	var done []persisted
	var id uint64

	persistOldest := func() {
		c := pending[0]
		pending = pending[1:]
		dir := filepath.Join(root, fmt.Sprintf("chk-%d", c.snap.ID()))
		if err := c.snap.Persist(dir); err != nil {
			t.Fatal(err)
		}
		done = append(done, persisted{dir, c.model})
	}

	for step := 0; step < steps; step++ {
		switch r := rng.IntN(100); {
		case r < 40:
			k, v := randKey(rng), fmt.Sprintf("v%d", step)
			b.Put([]byte(k), []byte(v))
			model[k] = v
		case r < 55:
			k := randKey(rng)
			b.Delete([]byte(k))
			delete(model, k)
		case r < 66:
			checkGetMany(t, step, b, rng, model)
		case r < 68: // a batch (some keys written twice in it), landing after the Puts before it
			wb := NewBatch(rng.IntN(4), 0)
			for n := rng.IntN(30); n > 0; n-- {
				k := randKey(rng)
				if rng.IntN(4) == 0 {
					wb.Delete([]byte(k))
					delete(model, k)
				} else {
					v := fmt.Sprintf("b%d-%d", step, n)
					wb.Put([]byte(k), []byte(v))
					model[k] = v
				}
			}
			WriteBatch(b, wb)
		case r < 75:
			k := randKey(rng)
			v, ok, err := b.Get([]byte(k))
			if err != nil {
				t.Fatal(err)
			}
			if want, wok := model[k]; ok != wok || string(v) != want {
				t.Fatalf("step %d: Get(%q) = %q,%v; model %q,%v", step, k, v, ok, want, wok)
			}
		case r < 85:
			prefix := randKey(rng)
			prefix = prefix[:rng.IntN(len(prefix)+1)]
			if got, want := scanAll(t, b, []byte(prefix)), filterPrefix(model, prefix); !maps.Equal(got, want) {
				t.Fatalf("step %d: Scan(%q) = %v; model %v", step, prefix, got, want)
			}
		case r < 92:
			id++
			s, err := b.Capture(id)
			if err != nil {
				t.Fatal(err)
			}
			pending = append(pending, captured{s, maps.Clone(model)})
		case r < 98:
			if len(pending) > 0 {
				persistOldest()
			}
		default: // crash: restart from the newest persisted checkpoint, dropping everything after it
			if len(done) == 0 {
				continue
			}
			last := done[len(done)-1]
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			b = kind.open(t, root, last.dir)
			model, pending = maps.Clone(last.model), nil
		}
	}
	for len(pending) > 0 {
		persistOldest()
	}
	if got := scanAll(t, b, nil); !maps.Equal(got, model) {
		t.Fatalf("final scan = %v; model %v", got, model)
	}
	if len(done) == 0 {
		t.Fatal("no checkpoint persisted; the test proves nothing")
	}
	// Checkpoints restore to exactly the state of their capture (a spread of them: each restore opens a store).
	for i, p := range done {
		if i%(len(done)/6+1) != 0 && i != len(done)-1 {
			continue
		}
		r := kind.open(t, filepath.Join(root, "verify"), p.dir)
		if got := scanAll(t, r, nil); !maps.Equal(got, p.model) {
			t.Fatalf("restore %s = %v; captured %v", p.dir, got, p.model)
		}
		r.Close()
	}
}

// checkGetMany looks up a random batch of keys (some twice, in random order) with GetMany and compares every
// answer with the model: each live key's value exactly once per index, nothing for an absent or deleted one.
func checkGetMany(t *testing.T, step int, b Backend, rng *rand.Rand, model map[string]string) {
	t.Helper()
	keys := make([][]byte, rng.IntN(40))
	for i := range keys {
		if i > 0 && rng.IntN(5) == 0 {
			keys[i] = slices.Clone(keys[rng.IntN(i)])
		} else {
			keys[i] = []byte(randKey(rng))
		}
	}
	got := make([]*string, len(keys))
	err := GetMany(b, keys, func(i int, v []byte) error {
		if got[i] != nil {
			return fmt.Errorf("key %d (%q) answered twice", i, keys[i])
		}
		s := string(v)
		got[i] = &s
		return nil
	})
	if err != nil {
		t.Fatalf("step %d: GetMany: %v", step, err)
	}
	for i, k := range keys {
		want, ok := model[string(k)]
		switch {
		case ok != (got[i] != nil):
			t.Fatalf("step %d: GetMany key %q: found %v, model %v", step, k, got[i] != nil, ok)
		case ok && *got[i] != want:
			t.Fatalf("step %d: GetMany key %q = %q, model %q", step, k, *got[i], want)
		}
	}
}

// Pins: changes made after Capture leaking into that snapshot's persisted copy.
func TestCaptureIsolation(t *testing.T) {
	t.Setenv("CLINK_STATE_FSYNC", "0")
	for _, kind := range backendKinds {
		t.Run(kind.name, func(t *testing.T) {
			root := t.TempDir()
			b := kind.open(t, root, "")
			defer b.Close()
			b.Put([]byte("a"), []byte("1"))
			b.Put([]byte("c"), []byte("1"))
			s, err := b.Capture(1)
			if err != nil {
				t.Fatal(err)
			}
			b.Put([]byte("a"), []byte("2"))
			b.Put([]byte("b"), []byte("2"))
			b.Delete([]byte("c"))
			dir := filepath.Join(root, "chk-1")
			if err := s.Persist(dir); err != nil {
				t.Fatal(err)
			}
			r := kind.open(t, filepath.Join(root, "r"), dir)
			defer r.Close()
			if got, want := scanAll(t, r, nil), map[string]string{"a": "1", "c": "1"}; !maps.Equal(got, want) {
				t.Fatalf("restored %v, want %v", got, want)
			}
			if got, want := scanAll(t, b, nil), map[string]string{"a": "2", "b": "2"}; !maps.Equal(got, want) {
				t.Fatalf("live %v, want %v", got, want)
			}
		})
	}
}

// Pins: a released (aborted) snapshot's changes missing from the next checkpoint although they are still newest.
func TestReleasedSnapshotReachesNextCheckpoint(t *testing.T) {
	t.Setenv("CLINK_STATE_FSYNC", "0")
	for _, kind := range backendKinds {
		t.Run(kind.name, func(t *testing.T) {
			root := t.TempDir()
			b := kind.open(t, root, "")
			defer b.Close()
			b.Put([]byte("a"), []byte("1"))
			s1, _ := b.Capture(1)
			s1.Release()
			b.Put([]byte("b"), []byte("2"))
			s2, _ := b.Capture(2)
			if err := s1.Persist(filepath.Join(root, "chk-1")); err == nil {
				t.Fatal("persisting a released snapshot succeeded")
			}
			if v, ok, _ := b.Get([]byte("a")); !ok || string(v) != "1" {
				t.Fatalf("after release Get(a) = %q,%v", v, ok)
			}
			dir := filepath.Join(root, "chk-2")
			if err := s2.Persist(dir); err != nil {
				t.Fatal(err)
			}
			if err := s2.Persist(filepath.Join(root, "chk-2b")); err == nil {
				t.Fatal("second Persist of one snapshot succeeded")
			}
			r := kind.open(t, filepath.Join(root, "r"), dir)
			defer r.Close()
			if got, want := scanAll(t, r, nil), map[string]string{"a": "1", "b": "2"}; !maps.Equal(got, want) {
				t.Fatalf("restored %v, want %v", got, want)
			}
		})
	}
}

// Pins: races and lost values while snapshot N persists and the operator already reads and writes N+1's keys.
func TestPersistWhileOperatorWrites(t *testing.T) {
	t.Setenv("CLINK_STATE_FSYNC", "0")
	for _, kind := range backendKinds {
		t.Run(kind.name, func(t *testing.T) {
			root := t.TempDir()
			b := kind.open(t, root, "")
			defer b.Close()

			type job struct {
				s     Snapshot
				model map[string]string
			}
			jobs := make(chan job, 1)
			type result struct {
				dir   string
				model map[string]string
				err   error
			}
			var results []result
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range jobs {
					dir := filepath.Join(root, fmt.Sprintf("chk-%d", j.s.ID()))
					results = append(results, result{dir, j.model, j.s.Persist(dir)})
				}
			}()

			model := map[string]string{}
			rng := rand.New(rand.NewPCG(9, 9))
			const keys = 400
			for round := 1; round <= 12; round++ {
				for i := 0; i < 300; i++ {
					k := fmt.Sprintf("k%03d", rng.IntN(keys))
					if rng.IntN(5) == 0 {
						b.Delete([]byte(k))
						delete(model, k)
					} else {
						v := fmt.Sprintf("r%d-%d", round, i)
						b.Put([]byte(k), []byte(v))
						model[k] = v
					}
					// Read keys that may sit in the snapshot being persisted right now.
					k2 := fmt.Sprintf("k%03d", rng.IntN(keys))
					v, ok, err := b.Get([]byte(k2))
					if err != nil {
						t.Fatal(err)
					}
					if want, wok := model[k2]; ok != wok || string(v) != want {
						t.Fatalf("round %d: Get(%q) = %q,%v; want %q,%v", round, k2, v, ok, want, wok)
					}
				}
				if got := scanAll(t, b, []byte("k1")); !maps.Equal(got, filterPrefix(model, "k1")) {
					t.Fatalf("round %d: scan mismatch", round)
				}
				s, err := b.Capture(uint64(round))
				if err != nil {
					t.Fatal(err)
				}
				jobs <- job{s, maps.Clone(model)}
			}
			close(jobs)
			wg.Wait()
			for _, r := range results {
				if r.err != nil {
					t.Fatal(r.err)
				}
				rb := kind.open(t, filepath.Join(root, "verify"), r.dir)
				if got := scanAll(t, rb, nil); !maps.Equal(got, r.model) {
					t.Fatalf("restore %s: %d keys, captured %d", r.dir, len(got), len(r.model))
				}
				rb.Close()
			}
		})
	}
}

// Pins: Pebble Capture copying the dirty map or touching disk on the operator goroutine.
func TestPebbleCaptureHandsOverDirtyMap(t *testing.T) {
	t.Setenv("CLINK_STATE_FSYNC", "0")
	b := backendKinds[1].open(t, t.TempDir(), "")
	defer b.Close()
	for i := 0; i < 50_000; i++ {
		b.Put([]byte(fmt.Sprintf("key-%06d", i)), []byte("v"))
	}
	pb := b.(*pebbleBackend)
	dirty := pb.dirty
	s, err := b.Capture(1)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	if ls := s.(*pebbleSnapshot).layers; len(ls) != 1 || ls[0] != layer(dirty) {
		t.Fatal("Capture copied the dirty map instead of handing it over")
	}
	if entries, _ := os.ReadDir(filepath.Join(pb.dir)); slices.ContainsFunc(entries, func(e os.DirEntry) bool {
		return strings.HasSuffix(e.Name(), ".sst")
	}) {
		t.Fatal("Capture wrote an sstable")
	}
}

// Pins: a memory restore that silently starts empty or trusts a damaged snapshot file.
func TestMemoryRestoreRejectsMissingAndCorruptFiles(t *testing.T) {
	t.Setenv("CLINK_STATE_FSYNC", "0")
	root := t.TempDir()
	b, _ := OpenMemory(Options{})
	for i := 0; i < 100; i++ {
		b.Put([]byte(fmt.Sprintf("k%d", i)), bytes.Repeat([]byte{byte(i)}, i))
	}
	s, _ := b.Capture(1)
	dir := filepath.Join(root, "chk-1")
	if err := s.Persist(dir); err != nil {
		t.Fatal(err)
	}
	path := dir
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := OpenMemory(Options{RestorePath: dir}); err != nil {
		t.Fatal(err)
	} else if got := scanAll(t, r, nil); len(got) != 100 || got["k7"] != string(bytes.Repeat([]byte{7}, 7)) {
		t.Fatalf("round trip lost data: %d keys", len(got))
	}

	empty := filepath.Join(root, "empty")
	os.Mkdir(empty, 0o755)
	if _, err := OpenMemory(Options{RestorePath: empty}); err == nil {
		t.Fatal("restore from a directory instead of a snapshot file succeeded")
	}
	for _, damage := range []struct {
		name string
		data []byte
	}{
		{"flipped byte", func() []byte { d := slices.Clone(good); d[len(d)/2] ^= 0x40; return d }()},
		{"truncated", good[:len(good)-9]},
		{"empty", nil},
	} {
		if err := os.WriteFile(path, damage.data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := OpenMemory(Options{RestorePath: dir})
		if err == nil || !strings.Contains(err.Error(), path) {
			t.Fatalf("%s: restore error %v, want one naming %s", damage.name, err, path)
		}
	}
}

// Pins: a failing disk leaving a partial snapshot file under the final name, or a success that is not on disk.
func TestMemoryPersistUnderFaultsNeverLeavesPartialFile(t *testing.T) {
	t.Setenv("CLINK_STATE_FSYNC", "1") // the fsync steps are part of what can fail
	root := t.TempDir()
	failures := 0
	for k := int64(0); k < 12; k++ {
		fsys := &FaultFS{Inner: OS, FailAfter: k}
		b, _ := OpenMemory(Options{FS: fsys})
		for i := 0; i < 50; i++ {
			b.Put([]byte(fmt.Sprintf("k%d", i)), []byte("value"))
		}
		s, _ := b.Capture(uint64(k))
		dir := filepath.Join(root, fmt.Sprintf("chk-%d", k))
		err := s.Persist(dir)
		if err != nil {
			failures++
			if !errors.Is(err, ErrInjected) {
				t.Fatalf("FailAfter=%d: error %v does not wrap ErrInjected", k, err)
			}
		}
		data, rerr := os.ReadFile(dir)
		switch {
		case rerr != nil && err == nil:
			t.Fatalf("FailAfter=%d: Persist succeeded but the file is missing: %v", k, rerr)
		case rerr == nil:
			n := 0
			payload, derr := Unframe(dir, data)
			if derr == nil {
				derr = decodeState(payload, func(_, _ []byte) { n++ })
			}
			if derr != nil || n != 50 {
				t.Fatalf("FailAfter=%d: file under the final name is partial (%d entries, %v)", k, n, derr)
			}
		}
	}
	if failures == 0 || failures == 12 {
		t.Fatalf("%d of 12 fault points failed; the sweep does not cover both outcomes", failures)
	}
}

// Pins: a failed Pebble Persist leaving a directory under the final name, or its changes missing later.
func TestPebblePersistFailureLeavesNoDirectory(t *testing.T) {
	t.Setenv("CLINK_STATE_FSYNC", "0")
	root := t.TempDir()
	fsys := &FaultFS{Inner: OS, FailAfter: -1}
	b, err := OpenPebble(Options{FS: fsys, Dir: filepath.Join(root, "work")})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	b.Put([]byte("a"), []byte("1"))
	s1, _ := b.Capture(1)
	fsys.FailAfter = fsys.calls.Load() + 1 // the scratch cleanup succeeds, the rename into place fails
	dir1 := filepath.Join(root, "chk-1")
	if err := s1.Persist(dir1); !errors.Is(err, ErrInjected) {
		t.Fatalf("Persist error = %v, want ErrInjected", err)
	}
	if _, err := os.Stat(dir1); !os.IsNotExist(err) {
		t.Fatalf("failed Persist left %s: %v", dir1, err)
	}
	fsys.FailAfter = -1
	b.Put([]byte("b"), []byte("2"))
	s2, _ := b.Capture(2)
	dir2 := filepath.Join(root, "chk-2")
	if err := s2.Persist(dir2); err != nil {
		t.Fatal(err)
	}
	r, err := OpenPebble(Options{Dir: filepath.Join(root, "r"), RestorePath: dir2})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got, want := scanAll(t, r, nil), map[string]string{"a": "1", "b": "2"}; !maps.Equal(got, want) {
		t.Fatalf("restored %v, want %v", got, want)
	}
	// A target that already holds something is never overwritten.
	os.MkdirAll(filepath.Join(root, "chk-3"), 0o755)
	os.WriteFile(filepath.Join(root, "chk-3", "x"), nil, 0o644)
	s3, _ := b.Capture(3)
	if err := s3.Persist(filepath.Join(root, "chk-3")); err == nil {
		t.Fatal("Persist over a non-empty directory succeeded")
	}
}

// Pins: OpenPebble wiping a directory that is not a store, or restoring an empty directory as empty state.
func TestOpenPebbleRefusesForeignDirectories(t *testing.T) {
	root := t.TempDir()
	precious := filepath.Join(root, "data", "precious.txt")
	os.MkdirAll(filepath.Dir(precious), 0o755)
	os.WriteFile(precious, []byte("x"), 0o644)
	os.WriteFile(filepath.Join(filepath.Dir(precious), "LOCK"), nil, 0o644) // looks like a store, is not only one
	if _, err := OpenPebble(Options{Dir: filepath.Dir(precious)}); err == nil {
		t.Fatal("OpenPebble took over a non-store directory")
	}
	if _, err := os.Stat(precious); err != nil {
		t.Fatalf("OpenPebble removed a foreign file: %v", err)
	}
	empty := filepath.Join(root, "empty")
	os.Mkdir(empty, 0o755)
	if b, err := OpenPebble(Options{Dir: filepath.Join(root, "w"), RestorePath: empty}); err == nil {
		b.Close()
		t.Fatal("restore from an empty directory succeeded")
	}
}

// Pins: checkpoint cost following the total state instead of what changed since the previous checkpoint.
func TestPebbleCheckpointIsIncremental(t *testing.T) {
	t.Setenv("CLINK_STATE_FSYNC", "0")
	root := t.TempDir()
	b := backendKinds[1].open(t, root, "")
	defer b.Close()
	val := bytes.Repeat([]byte("0123456789abcdef"), 4)
	for i := 0; i < 200_000; i++ {
		b.Put(KeyedKey(i%DefaultKeyGroups, 1, fmt.Appendf(nil, "user-%07d", i)), val)
	}
	persist := func(id uint64) string {
		s, err := b.Capture(id)
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(root, fmt.Sprintf("chk-%d", id))
		if err := s.Persist(dir); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	dir1 := persist(1)
	for i := 0; i < 10; i++ {
		b.Put(KeyedKey(i, 1, fmt.Appendf(nil, "user-%07d", i*997)), []byte("changed"))
	}
	b.Delete(KeyedKey(5, 1, []byte("user-0000005")))
	dir2 := persist(2)

	total1, _ := snapshotBytes(t, dir1, nil)
	_, fresh2 := snapshotBytes(t, dir2, snapshotInodes(t, dir1))
	t.Logf("checkpoint 1: %d bytes; checkpoint 2 new bytes: %d", total1, fresh2)
	if total1 < 1<<20 {
		t.Fatalf("checkpoint 1 is only %d bytes; the state did not reach the store", total1)
	}
	if fresh2 > total1/50 {
		t.Fatalf("checkpoint 2 wrote %d new bytes for 11 changed keys (state %d bytes)", fresh2, total1)
	}
	r := backendKinds[1].open(t, filepath.Join(root, "r"), dir2)
	defer r.Close()
	if v, ok, _ := r.Get(KeyedKey(3, 1, fmt.Appendf(nil, "user-%07d", 3*997))); string(v) != "changed" || !ok {
		t.Fatalf("restored changed key = %q,%v", v, ok)
	}
	if _, ok, _ := r.Get(KeyedKey(5, 1, []byte("user-0000005"))); ok {
		t.Fatal("restored a deleted key")
	}
	if v, _, _ := r.Get(KeyedKey(7, 1, []byte("user-0000007"))); !bytes.Equal(v, val) {
		t.Fatal("restored unchanged key lost its value")
	}
}

// Pins: a chain that grows forever (restore cost and disk without bound), a re-base that loses state, and a
// garbage collection that deletes what a live snapshot still names (or keeps what none does).
func TestPebbleChainRebasesAndCollectsGarbage(t *testing.T) {
	t.Setenv("CLINK_STATE_FSYNC", "0")
	root := t.TempDir()
	shared := filepath.Join(root, "shared")
	var mu sync.Mutex     // the garbage collection runs in the background
	var live []string     // the last two snapshots, as a retention of 2 would keep
	var liveAtGC []string // what the last garbage collection was told
	b, err := OpenPebble(Options{Dir: filepath.Join(root, "work"), SharedDir: shared,
		LiveSnapshots: func() ([]string, error) {
			mu.Lock()
			defer mu.Unlock()
			liveAtGC = slices.Clone(live)
			return liveAtGC, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	model := map[string]string{}
	for id := uint64(1); id <= 2*maxChainDeltas+3; id++ {
		for i := 0; i < 50; i++ {
			k := fmt.Sprintf("k%03d", (int(id)*37+i*11)%400)
			if i%7 == 0 {
				b.Delete([]byte(k))
				delete(model, k)
			} else {
				v := fmt.Sprintf("v%d-%d", id, i)
				b.Put([]byte(k), []byte(v))
				model[k] = v
			}
		}
		s, _ := b.Capture(id)
		path := filepath.Join(root, fmt.Sprintf("chk-%d", id))
		if err := s.Persist(path); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		live = append(live, path)
		if len(live) > 2 {
			live = live[1:]
		}
		mu.Unlock()
		c, err := readChain(OS, path)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.deltas) > maxChainDeltas {
			t.Fatalf("snapshot %d: chain of %d deltas", id, len(c.deltas))
		}
	}
	// Every live snapshot restores; the shared directory holds nothing that neither they nor the snapshots live at
	// the last garbage collection name.
	b.Close() // waits for a background re-base
	keep := map[string]bool{}
	for _, p := range liveAtGC {
		c, _ := readChain(OS, p)
		for _, f := range c.files() {
			keep[filepath.Base(f)] = true
		}
	}
	for _, p := range live {
		r, err := OpenPebble(Options{Dir: filepath.Join(root, "r"), RestorePath: p})
		if err != nil {
			t.Fatal(err)
		}
		got := scanAll(t, r, nil)
		r.Close()
		if p == live[len(live)-1] && !maps.Equal(got, model) {
			t.Fatalf("restored %d keys, want %d", len(got), len(model))
		}
		c, _ := readChain(OS, p)
		for _, f := range c.files() {
			keep[filepath.Base(f)] = true
		}
	}
	entries, _ := os.ReadDir(shared)
	for _, e := range entries {
		if !keep[e.Name()] {
			t.Errorf("shared file %s outlived every snapshot that named it", e.Name())
		}
	}
	// Left: the old base and deltas that the snapshot before the last re-base names (16 + 1), the new base, and the
	// deltas since (3); without a collection it would be 35 deltas and 2 bases.
	if len(liveAtGC) == 0 || len(entries) > maxChainDeltas+6 {
		t.Fatalf("no garbage collected: %d shared files after %d snapshots", len(entries), 2*maxChainDeltas+3)
	}
}

// Pins: Close leaking Pebble's (or our) goroutines, which would pile up over job restarts.
func TestPebbleCloseReleasesGoroutines(t *testing.T) {
	t.Setenv("CLINK_STATE_FSYNC", "0")
	root := t.TempDir()
	before := runtime.NumGoroutine()
	for i := 0; i < 3; i++ {
		b := backendKinds[1].open(t, root, "")
		for j := 0; j < 1000; j++ {
			b.Put([]byte(fmt.Sprintf("k%d", j)), []byte("v"))
		}
		s, _ := b.Capture(1)
		if err := s.Persist(filepath.Join(root, fmt.Sprintf("chk-%d", i))); err != nil {
			t.Fatal(err)
		}
		scanAll(t, b, []byte("k1"))
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines before, %d after Close:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// snapshotInodes returns the inodes of every file a persisted Pebble snapshot is made of (its listing, deltas and
// base files).
func snapshotInodes(t *testing.T, path string) map[uint64]bool {
	out := map[uint64]bool{inode(t, path): true}
	c, err := readChain(OS, path)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range c.deltas {
		out[inode(t, d)] = true
	}
	if c.base != "" {
		for ino := range inodes(t, c.base) {
			out[ino] = true
		}
	}
	return out
}

// snapshotBytes returns the total size of the files a persisted Pebble snapshot is made of, and the size of those
// whose inode is not in shared.
func snapshotBytes(t *testing.T, path string, shared map[uint64]bool) (total, fresh int64) {
	add := func(p string) {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		total += fi.Size()
		if !shared[inode(t, p)] {
			fresh += fi.Size()
		}
	}
	add(path)
	c, err := readChain(OS, path)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range c.deltas {
		add(d)
	}
	if c.base != "" {
		entries, err := os.ReadDir(c.base)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			add(filepath.Join(c.base, e.Name()))
		}
	}
	return total, fresh
}

func inodes(t *testing.T, dir string) map[uint64]bool {
	out := map[uint64]bool{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		out[inode(t, filepath.Join(dir, e.Name()))] = true
	}
	return out
}

func inode(t *testing.T, path string) uint64 {
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}
