package state

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// The filter never rejects a key it was given, across its generations, and rejects most keys it was not given.
func TestKeyFilterNoFalseNegatives(t *testing.T) {
	f := newKeyFilter()
	const n = 3 * filterFirstKeys // spans two generations
	key := func(i int) []byte { return binary.BigEndian.AppendUint64([]byte{0, 1, 1}, uint64(i)) }
	add, done := f.adder()
	for i := 0; i < n; i += 2 {
		add(key(i))
	}
	done()
	if gens := len(f.gens); gens != 2 {
		t.Fatalf("%d generations, want 2", gens)
	}
	fp := 0
	for i := 0; i < n; i++ {
		ok := f.mayContain(key(i))
		if i%2 == 0 && !ok {
			t.Fatalf("key %d added but rejected", i)
		}
		if i%2 == 1 && ok {
			fp++
		}
	}
	if rate := float64(fp) / (n / 2); rate > 0.005 {
		t.Fatalf("false positive rate %.3f", rate)
	}
}

// A restored store rebuilds its key filter in the background: before and after the rebuild every lookup agrees
// with what was persisted and written since, and once rebuilt a key it never held is ruled out without Pebble.
func TestRestoredStoreRebuildsKeyFilter(t *testing.T) {
	t.Setenv("CLINK_STATE_FSYNC", "0")
	root := t.TempDir()
	b := backendKinds[1].open(t, root, "")
	key := func(i int) []byte { return binary.BigEndian.AppendUint64([]byte{0, 1, 1}, uint64(i)) }
	wb := NewBatch(0, 0)
	for i := 0; i < 5000; i += 2 {
		wb.Put(key(i), []byte{byte(i)})
	}
	WriteBatch(b, wb)
	s, err := b.Capture(1)
	if err != nil {
		t.Fatal(err)
	}
	chk := filepath.Join(root, "chk-1")
	if err := s.Persist(chk); err != nil {
		t.Fatal(err)
	}
	b.Close()

	r := backendKinds[1].open(t, filepath.Join(root, "restored"), chk)
	defer r.Close()
	r.Put(key(1), []byte("new")) // written after the restore: only in the dirty map, then the filter
	check := func() {
		t.Helper()
		keys := make([][]byte, 5000)
		for i := range keys {
			keys[i] = key(i)
		}
		got := map[int]string{}
		if err := GetMany(r, keys, func(i int, v []byte) error { got[i] = string(v); return nil }); err != nil {
			t.Fatal(err)
		}
		for i := range keys {
			want, ok := string([]byte{byte(i)}), i%2 == 0
			if i == 1 {
				want, ok = "new", true
			}
			if v, found := got[i]; found != ok || (ok && v != want) {
				t.Fatalf("key %d: %q, %v; want %q, %v", i, v, found, want, ok)
			}
		}
	}
	check()
	pb := r.(*pebbleBackend)
	for pb.built.Load() == nil {
		time.Sleep(time.Millisecond)
	}
	check()
	if !pb.filterReady {
		t.Fatal("the rebuilt filter was not taken up")
	}
	if pb.absent(key(2)) || pb.absent(key(4998)) { // (key 1 is in the dirty map, which the filter does not cover)
		t.Fatal("the filter rules out a key the store holds")
	}
	if s, err := r.Capture(2); err != nil {
		t.Fatal(err)
	} else if err := s.Persist(filepath.Join(root, "chk-2")); err != nil {
		t.Fatal(err)
	}
	check()
}

// pins: a lookup of a key a run does not hold (a key filter's false positive) is answered by the run's Bloom
// filter, without building its hash index (but for the filter's own false positives, about 1 in 5000 lookups:
// 20 runs of 50 absent lookups each may see a few); a key it holds is found, the newest entry of a key written
// twice.
func TestRunAnswersAbsentKeysWithoutItsIndex(t *testing.T) {
	indexed := 0
	for n := 0; n < 20; n++ {
		wb := NewBatch(0, 0)
		for i := 0; i < 5000; i++ {
			wb.Put([]byte(fmt.Sprintf("key-%d-%05d", n, i)), []byte(fmt.Sprint(i)))
		}
		wb.Put([]byte(fmt.Sprintf("key-%d-%05d", n, 7)), []byte("newer"))
		r := &wb.r
		for i := 5000; i < 5050; i++ {
			if _, ok := r.get([]byte(fmt.Sprintf("key-%d-%05d", n, i))); ok {
				t.Fatalf("absent key %d found", i)
			}
		}
		if r.indexed.Load() {
			indexed++
		}
		for i := 0; i < 5000; i++ {
			want := fmt.Sprint(i)
			if i == 7 {
				want = "newer"
			}
			if e, ok := r.get([]byte(fmt.Sprintf("key-%d-%05d", n, i))); !ok || string(e.v) != want {
				t.Fatalf("key %d: %q, %v; want %q", i, e.v, ok, want)
			}
		}
	}
	if indexed > 3 {
		t.Fatalf("lookups of absent keys built the index of %d runs of 20", indexed)
	}
}
