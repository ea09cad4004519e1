package state

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The randomized model with pre-persists after a few batch entries: checkpoints name pre-persisted tables, and
// the model's crashes drop pre-persists that no checkpoint took.
func TestPebblePrePersistsAgreeWithMapModel(t *testing.T) {
	t.Setenv("CLINK_STATE_FSYNC", "0")
	defer func(n, m int) { prePersistEntries, stripeMinEntries = n, m }(prePersistEntries, stripeMinEntries)
	prePersistEntries = 8
	for si, stripes := range []int{1 << 18, 4} {
		stripeMinEntries = stripes
		for _, kind := range backendKinds[1:] {
			for _, seed := range []uint64{5, 6} {
				if testing.Short() && seed != uint64(5+si) {
					continue // make test (under -race, a minute for all four): each seed once, with one striping
				}
				t.Run(fmt.Sprintf("%s/stripes%d/seed%d", kind.name, stripes, seed), func(t *testing.T) {
					runModel(t, kind, seed, 2500)
				})
			}
		}
	}
}

// writeBatches hands the store n batches of 20 keys each (WriteBatch), recording them in model.
func writeBatches(b Backend, model map[string]string, tag string, n int) {
	for i := range n {
		wb := NewBatch(20, 0)
		for j := range 20 {
			k := fmt.Sprintf("k%03d", (len(tag)*131+i*53+j*17)%300)
			if j%9 == 0 {
				wb.Delete([]byte(k))
				delete(model, k)
			} else {
				v := fmt.Sprintf("%s-%d-%d", tag, i, j)
				wb.Put([]byte(k), []byte(v))
				model[k] = v
			}
		}
		WriteBatch(b, wb)
	}
}

// Pins: a checkpoint whose listing names pre-persisted tables restores exactly (through re-bases and garbage
// collection), and a crash after pre-persists that no checkpoint took yet restores the last checkpoint exactly.
func TestPrePersistThenCrashRestoresExactly(t *testing.T) {
	t.Setenv("CLINK_STATE_FSYNC", "0")
	defer func(n int) { prePersistEntries = n }(prePersistEntries)
	prePersistEntries = 30
	root := t.TempDir()
	shared := filepath.Join(root, "shared")
	var mu sync.Mutex
	var live []string
	b, err := OpenPebble(Options{Dir: filepath.Join(root, "work"), SharedDir: shared,
		LiveSnapshots: func() ([]string, error) {
			mu.Lock()
			defer mu.Unlock()
			return append([]string(nil), live...), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	model := map[string]string{}
	models := map[string]map[string]string{}
	named := 0
	for id := uint64(1); id <= maxChainDeltas+5; id++ {
		writeBatches(b, model, fmt.Sprintf("c%d", id), 3)
		b.(*pebbleBackend).lastPre.wait()
		writeBatches(b, model, fmt.Sprintf("d%d", id), 2) // the last may start another pre-persist, or not
		b.Put([]byte("put"), []byte(fmt.Sprint(id)))
		model["put"] = fmt.Sprint(id)
		s, err := b.Capture(id)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(root, fmt.Sprintf("chk-%d", id))
		if err := s.Persist(path); err != nil {
			t.Fatal(err)
		}
		models[path] = maps.Clone(model)
		c, err := readChain(OS, path)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range c.deltas {
			if isPrePersistFile(filepath.Base(d)) {
				named++
			}
		}
		mu.Lock()
		live = append(live, path)
		if len(live) > 2 {
			live = live[1:]
		}
		mu.Unlock()
	}
	if named == 0 {
		t.Fatal("no listing named a pre-persisted table; the test proves nothing")
	}
	// The crash: pre-persists written, no checkpoint takes them.
	last := live[len(live)-1]
	writeBatches(b, model, "lost", 4)
	b.(*pebbleBackend).lastPre.wait()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	for _, p := range live {
		if err := VerifySnapshot(OS, p, true); err != nil {
			t.Fatal(err)
		}
		r, err := OpenPebble(Options{Dir: filepath.Join(root, "r"), RestorePath: p})
		if err != nil {
			t.Fatal(err)
		}
		got := scanAll(t, r, nil)
		r.Close()
		if !maps.Equal(got, models[p]) {
			t.Fatalf("restore %s = %v; captured %v", p, got, models[p])
		}
	}
	// And the restored store goes on, pre-persisting again.
	r, err := OpenPebble(Options{Dir: filepath.Join(root, "r2"), SharedDir: shared, RestorePath: last})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	want := maps.Clone(models[last])
	writeBatches(r, want, "again", 5)
	s, _ := r.Capture(100)
	path := filepath.Join(root, "chk-100")
	if err := s.Persist(path); err != nil {
		t.Fatal(err)
	}
	r2, err := OpenPebble(Options{Dir: filepath.Join(root, "r3"), RestorePath: path})
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	if got := scanAll(t, r2, nil); !maps.Equal(got, want) {
		t.Fatalf("restore after restart = %v; want %v", got, want)
	}
}

// Pins: a pre-persist that failed fails the Persist of its checkpoint (which must not claim data it does not
// have), and the next checkpoint holds everything.
func TestFailedPrePersistFailsNextPersist(t *testing.T) {
	t.Setenv("CLINK_STATE_FSYNC", "0")
	defer func(n int) { prePersistEntries = n }(prePersistEntries)
	prePersistEntries = 30
	root := t.TempDir()
	b, err := OpenPebble(Options{Dir: filepath.Join(root, "work")})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	model := map[string]string{}
	writeBatches(b, model, "a", 2)
	s1, _ := b.Capture(1)
	if err := s1.Persist(filepath.Join(root, "chk-1")); err != nil {
		t.Fatal(err)
	}
	prePersistFault = errors.New("injected pre-persist failure")
	writeBatches(b, model, "b", 3)
	b.(*pebbleBackend).lastPre.wait()
	prePersistFault = nil
	s2, _ := b.Capture(2)
	err = s2.Persist(filepath.Join(root, "chk-2"))
	if err == nil || !strings.Contains(err.Error(), "injected") {
		t.Fatalf("Persist after a failed pre-persist = %v", err)
	}
	writeBatches(b, model, "c", 3)
	s3, _ := b.Capture(3)
	if err := s3.Persist(filepath.Join(root, "chk-3")); err != nil {
		t.Fatal(err)
	}
	r, err := OpenPebble(Options{Dir: filepath.Join(root, "r"), RestorePath: filepath.Join(root, "chk-3")})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got := scanAll(t, r, nil); !maps.Equal(got, model) {
		t.Fatalf("restored %v; want %v", got, model)
	}
}
